// aot/partition_impl.h — pieces the partitioners share (partition.cpp, min_cut.cpp).
#pragma once

#include <set>

#include "aot/joint.h"

namespace ember::aot {

/// Bytes of a value of geometry `m` (its elements; 0 for None).
int64_t value_bytes(const TensorMeta& m);

/// A graph of the joint graph's nodes in `include` (Calls and Constants, copied with their
/// names), reading `inputs` as its inputs (a joint input keeps its kind and name; another
/// value becomes a placeholder named after it), returning `outputs`; dead code removed.
std::unique_ptr<Graph> extract_graph(const Graph& j, const std::string& name, const std::vector<ValueRef>& inputs,
                                     const std::set<const Node*>& include, const std::vector<ValueRef>& outputs);

/// The forward graph (every forward node) and the backward graph (every backward node and
/// the forward nodes in `recomputed`), with `saved` passed from one to the other.
Partition build_partition(const JointGraph& joint, const std::set<const Node*>& recomputed,
                          const std::vector<ValueRef>& saved);

/// The min-cut choice of saved values (min_cut.cpp).
Partition min_cut_partition(const JointGraph& joint);

}  // namespace ember::aot
