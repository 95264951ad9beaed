// ember/ember.h — the whole public API.
#pragma once

#include "ember/autograd.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/ivalue.h"
#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/random.h"
#include "ember/ops/reduction.h"
#include "ember/ops/shape.h"
#include "ember/ops/view.h"
#include "ember/scalar.h"
#include "ember/serialize.h"
#include "ember/tensor.h"
