// graph/runnable.h — the pieces of to_runnable_cpp's programs that other program writers
// share (a repro's main; debug/repro.cpp). See Note [graph], "Runnable programs".
#pragma once

#include <string>

#include "ember/graph.h"

namespace ember::graph {

/// The C++ expression of a runnable program that makes an input of `m`'s geometry with
/// random values (its helper make_input): over the program's `ks` when `m`'s geometry holds
/// size symbols, so that it is made at the symbol values of the run.
std::string make_input_cpp(const TensorMeta& m);

/// Whether to_runnable_cpp's program of `g` keeps size symbols (`ks`, and set_symbol for
/// command-line arguments `s<k>=<size>`): `g` was traced over symbols.
bool runnable_has_symbols(const Graph& g);

}  // namespace ember::graph
