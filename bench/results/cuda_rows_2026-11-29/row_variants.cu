#include "generated_prelude.cuh"

extern "C" __global__ void __launch_bounds__(256) ln_A(const float* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, float* __restrict__ out0, float* __restrict__ out1, float* __restrict__ out2, int aligned) {
  typedef int IDX;
  const IDX row = static_cast<IDX>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= 8192) return;
  IDX rem_k = row;
  const IDX k0 = rem_k;
  const IDX b0 = 0 + k0 * 1024;
  const IDX b1 = 0;
  const IDX b2 = 0;
  const IDX c0 = 0 + k0 * 1024;
  const IDX c1 = 0 + k0 * 1;
  const IDX c2 = 0 + k0 * 1;
  float v[32];  // slot g * 4 + e: element g * 128 + lane * 4 + e of the row
  if (aligned) {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      const IDX j = g * 128 + lane * 4;
      if (j < 1024) {
        const IDX o0 = b0 + j * 1;
        const ember_dev::Vec<float, 4> w0 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in0 + o0);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const IDX r = j + e;
          const float t0 = ember_dev::cvt<float>(w0.v[e]);
          v[g * 4 + e] = t0;
        }
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const IDX r = g * 128 + lane * 4 + e;
        if (r < 1024) {
          const IDX o0 = b0 + r * 1;
          const float t0 = ember_dev::cvt<float>(in0[o0]);
          v[g * 4 + e] = t0;
        }
      }
    }
  }
  float total = float(0);
#pragma unroll
  for (int g = 0; g < 8; ++g) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (true) {
        const float x = v[g * 4 + e];
        const float y = float(x);
        total = ember_dev::SumOp()(total, y);
      }
    }
  }
  total = ember_dev::warp_reduce(total, ember_dev::SumOp());
  const float mean = total / float(1024);
  float sq = float(0);
#pragma unroll
  for (int g = 0; g < 8; ++g) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (true) {
        const float x = v[g * 4 + e];
        const float y = float((x - mean) * (x - mean));
        sq = ember_dev::SumOp()(sq, y);
      }
    }
  }
  sq = ember_dev::warp_reduce(sq, ember_dev::SumOp());
  const float rstd = float(1) / ember_dev::sqrt(sq / float(1024) + float(1.0000000000000001e-05));
  if (lane == 0) {
    out1[c1] = ember_dev::cvt<float>(mean);
    out2[c2] = ember_dev::cvt<float>(rstd);
  }
  if (aligned) {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      const IDX j = g * 128 + lane * 4;
      if (j < 1024) {
        const IDX o1 = b1 + j * 1;
        const IDX o2 = b2 + j * 1;
        const ember_dev::Vec<float, 4> w1 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in1 + o1);
        const ember_dev::Vec<float, 4> w2 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in2 + o2);
        ember_dev::Vec<float, 4> wo;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const IDX r = j + e;
          const float x = v[g * 4 + e];
          const float rv = (((x - mean) * rstd) * ember_dev::cvt<float>(w1.v[e])) + ember_dev::cvt<float>(w2.v[e]);
          ember_dev::assign(wo.v[e], ember_dev::cvt<float>(rv));
        }
        *reinterpret_cast<ember_dev::Vec<float, 4>*>(out0 + c0 + j) = wo;
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const IDX r = g * 128 + lane * 4 + e;
        if (r < 1024) {
          const IDX o1 = b1 + r * 1;
          const IDX o2 = b2 + r * 1;
          const float x = v[g * 4 + e];
          const float rv = (((x - mean) * rstd) * ember_dev::cvt<float>(in1[o1])) + ember_dev::cvt<float>(in2[o2]);
          ember_dev::assign(out0[c0 + r * 1], ember_dev::cvt<float>(rv));
        }
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) ln_C(const float* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, float* __restrict__ out0, float* __restrict__ out1, float* __restrict__ out2, int aligned) {
  typedef int IDX;
  const IDX row = static_cast<IDX>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= 8192) return;
  IDX rem_k = row;
  const IDX k0 = rem_k;
  const IDX b0 = 0 + k0 * 1024;
  const IDX b1 = 0;
  const IDX b2 = 0;
  const IDX c0 = 0 + k0 * 1024;
  const IDX c1 = 0 + k0 * 1;
  const IDX c2 = 0 + k0 * 1;
  float v[32];  // slot g * 4 + e: element g * 128 + lane * 4 + e of the row
  if (aligned) {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      const IDX j = g * 128 + lane * 4;
      if (j < 1024) {
        const IDX o0 = b0 + j * 1;
        const ember_dev::Vec<float, 4> w0 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in0 + o0);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const IDX r = j + e;
          const float t0 = ember_dev::cvt<float>(w0.v[e]);
          v[g * 4 + e] = t0;
        }
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const IDX r = g * 128 + lane * 4 + e;
        if (r < 1024) {
          const IDX o0 = b0 + r * 1;
          const float t0 = ember_dev::cvt<float>(in0[o0]);
          v[g * 4 + e] = t0;
        }
      }
    }
  }
  float total = float(0);
#pragma unroll
  for (int g = 0; g < 8; ++g) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (true) {
        const float x = v[g * 4 + e];
        const float y = float(x);
        total = ember_dev::SumOp()(total, y);
      }
    }
  }
  total = ember_dev::warp_reduce(total, ember_dev::SumOp());
  const float mean = total / float(1024);
  float sq = float(0);
#pragma unroll
  for (int g = 0; g < 8; ++g) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (true) {
        const float x = v[g * 4 + e];
        const float y = float((x - mean) * (x - mean));
        sq = ember_dev::SumOp()(sq, y);
      }
    }
  }
  sq = ember_dev::warp_reduce(sq, ember_dev::SumOp());
  const float rstd = float(1) / ember_dev::sqrt(sq / float(1024) + float(1.0000000000000001e-05));
  if (aligned) {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      const IDX j = g * 128 + lane * 4;
      if (j < 1024) {
        const IDX o1 = b1 + j * 1;
        const IDX o2 = b2 + j * 1;
        const ember_dev::Vec<float, 4> w1 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in1 + o1);
        const ember_dev::Vec<float, 4> w2 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in2 + o2);
        ember_dev::Vec<float, 4> wo;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const IDX r = j + e;
          const float x = v[g * 4 + e];
          const float rv = (((x - mean) * rstd) * ember_dev::cvt<float>(w1.v[e])) + ember_dev::cvt<float>(w2.v[e]);
          ember_dev::assign(wo.v[e], ember_dev::cvt<float>(rv));
        }
        *reinterpret_cast<ember_dev::Vec<float, 4>*>(out0 + c0 + j) = wo;
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const IDX r = g * 128 + lane * 4 + e;
        if (r < 1024) {
          const IDX o1 = b1 + r * 1;
          const IDX o2 = b2 + r * 1;
          const float x = v[g * 4 + e];
          const float rv = (((x - mean) * rstd) * ember_dev::cvt<float>(in1[o1])) + ember_dev::cvt<float>(in2[o2]);
          ember_dev::assign(out0[c0 + r * 1], ember_dev::cvt<float>(rv));
        }
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) ln_B(const float* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, float* __restrict__ out0, float* __restrict__ out1, float* __restrict__ out2, int aligned) {
  typedef int IDX;
  const IDX row = static_cast<IDX>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= 8192) return;
  IDX rem_k = row;
  const IDX k0 = rem_k;
  const IDX b0 = 0 + k0 * 1024;
  const IDX b1 = 0;
  const IDX b2 = 0;
  const IDX c0 = 0 + k0 * 1024;
  const IDX c1 = 0 + k0 * 1;
  const IDX c2 = 0 + k0 * 1;
  float v[32];  // slot g * 4 + e: element g * 128 + lane * 4 + e of the row
  if (aligned) {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      const IDX j = g * 128 + lane * 4;
      if (j < 1024) {
        const IDX o0 = b0 + j * 1;
        const ember_dev::Vec<float, 4> w0 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in0 + o0);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const IDX r = j + e;
          const float t0 = ember_dev::cvt<float>(w0.v[e]);
          v[g * 4 + e] = t0;
        }
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const IDX r = g * 128 + lane * 4 + e;
        if (r < 1024) {
          const IDX o0 = b0 + r * 1;
          const float t0 = ember_dev::cvt<float>(in0[o0]);
          v[g * 4 + e] = t0;
        }
      }
    }
  }
  float total_p[4] = {float(0), float(0), float(0), float(0)};
#pragma unroll
  for (int g = 0; g < 8; ++g) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (true) {
        const float x = v[g * 4 + e];
        const float y = float(x);
        total_p[e] = ember_dev::SumOp()(total_p[e], y);
      }
    }
  }
  float total = ember_dev::SumOp()(ember_dev::SumOp()(total_p[0], total_p[1]), ember_dev::SumOp()(total_p[2], total_p[3]));
  total = ember_dev::warp_reduce(total, ember_dev::SumOp());
  const float mean = total / float(1024);
  float sq_p[4] = {float(0), float(0), float(0), float(0)};
#pragma unroll
  for (int g = 0; g < 8; ++g) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (true) {
        const float x = v[g * 4 + e];
        const float y = float((x - mean) * (x - mean));
        sq_p[e] = ember_dev::SumOp()(sq_p[e], y);
      }
    }
  }
  float sq = ember_dev::SumOp()(ember_dev::SumOp()(sq_p[0], sq_p[1]), ember_dev::SumOp()(sq_p[2], sq_p[3]));
  sq = ember_dev::warp_reduce(sq, ember_dev::SumOp());
  const float rstd = float(1) / ember_dev::sqrt(sq / float(1024) + float(1.0000000000000001e-05));
  if (lane == 0) {
    out1[c1] = ember_dev::cvt<float>(mean);
    out2[c2] = ember_dev::cvt<float>(rstd);
  }
  if (aligned) {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      const IDX j = g * 128 + lane * 4;
      if (j < 1024) {
        const IDX o1 = b1 + j * 1;
        const IDX o2 = b2 + j * 1;
        const ember_dev::Vec<float, 4> w1 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in1 + o1);
        const ember_dev::Vec<float, 4> w2 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in2 + o2);
        ember_dev::Vec<float, 4> wo;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const IDX r = j + e;
          const float x = v[g * 4 + e];
          const float rv = (((x - mean) * rstd) * ember_dev::cvt<float>(w1.v[e])) + ember_dev::cvt<float>(w2.v[e]);
          ember_dev::assign(wo.v[e], ember_dev::cvt<float>(rv));
        }
        *reinterpret_cast<ember_dev::Vec<float, 4>*>(out0 + c0 + j) = wo;
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const IDX r = g * 128 + lane * 4 + e;
        if (r < 1024) {
          const IDX o1 = b1 + r * 1;
          const IDX o2 = b2 + r * 1;
          const float x = v[g * 4 + e];
          const float rv = (((x - mean) * rstd) * ember_dev::cvt<float>(in1[o1])) + ember_dev::cvt<float>(in2[o2]);
          ember_dev::assign(out0[c0 + r * 1], ember_dev::cvt<float>(rv));
        }
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) sm_A(const float* __restrict__ in0, float* __restrict__ out0, int aligned) {
  typedef int IDX;
  const IDX row = static_cast<IDX>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= 8192) return;
  IDX rem_k = row;
  const IDX k0 = rem_k;
  const IDX b0 = 0 + k0 * 1024;
  const IDX c0 = 0 + k0 * 1024;
  float v[32];  // slot g * 4 + e: element g * 128 + lane * 4 + e of the row
  if (aligned) {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      const IDX j = g * 128 + lane * 4;
      if (j < 1024) {
        const IDX o0 = b0 + j * 1;
        const ember_dev::Vec<float, 4> w0 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in0 + o0);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const IDX r = j + e;
          const float t0 = ember_dev::cvt<float>(w0.v[e]);
          v[g * 4 + e] = t0;
        }
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const IDX r = g * 128 + lane * 4 + e;
        if (r < 1024) {
          const IDX o0 = b0 + r * 1;
          const float t0 = ember_dev::cvt<float>(in0[o0]);
          v[g * 4 + e] = t0;
        }
      }
    }
  }
  float mx = -ember_dev::inf<float>();
#pragma unroll
  for (int g = 0; g < 8; ++g) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (true) {
        const float x = v[g * 4 + e];
        const float y = float(x);
        mx = ember_dev::MaxOp()(mx, y);
      }
    }
  }
  mx = ember_dev::warp_reduce(mx, ember_dev::MaxOp());
  float sum = float(0);
#pragma unroll
  for (int g = 0; g < 8; ++g) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (true) {
        const float x = v[g * 4 + e];
        const float y = float(ember_dev::exp(x - mx));
        v[g * 4 + e] = y;
        sum = ember_dev::SumOp()(sum, y);
      }
    }
  }
  sum = ember_dev::warp_reduce(sum, ember_dev::SumOp());
  const float rsum = float(1) / sum;
  if (aligned) {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      const IDX j = g * 128 + lane * 4;
      if (j < 1024) {
        ember_dev::Vec<float, 4> wo;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const IDX r = j + e;
          const float x = v[g * 4 + e];
          const float rv = x * rsum;
          ember_dev::assign(wo.v[e], ember_dev::cvt<float>(rv));
        }
        *reinterpret_cast<ember_dev::Vec<float, 4>*>(out0 + c0 + j) = wo;
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const IDX r = g * 128 + lane * 4 + e;
        if (r < 1024) {
          const float x = v[g * 4 + e];
          const float rv = x * rsum;
          ember_dev::assign(out0[c0 + r * 1], ember_dev::cvt<float>(rv));
        }
      }
    }
  }
}

// cuda_fused_native_layer_norm_1: layer_norm rows of Float[8192, 1024] (row %ln), 8192 rows of 1024, a warp per row, the row in registers
extern "C" __global__ void __launch_bounds__(256) sm_B(const float* __restrict__ in0, float* __restrict__ out0, int aligned) {
  typedef int IDX;
  const IDX row = static_cast<IDX>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= 8192) return;
  IDX rem_k = row;
  const IDX k0 = rem_k;
  const IDX b0 = 0 + k0 * 1024;
  const IDX c0 = 0 + k0 * 1024;
  float v[32];  // slot g * 4 + e: element g * 128 + lane * 4 + e of the row
  if (aligned) {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      const IDX j = g * 128 + lane * 4;
      if (j < 1024) {
        const IDX o0 = b0 + j * 1;
        const ember_dev::Vec<float, 4> w0 = *reinterpret_cast<const ember_dev::Vec<float, 4>*>(in0 + o0);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const IDX r = j + e;
          const float t0 = ember_dev::cvt<float>(w0.v[e]);
          v[g * 4 + e] = t0;
        }
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const IDX r = g * 128 + lane * 4 + e;
        if (r < 1024) {
          const IDX o0 = b0 + r * 1;
          const float t0 = ember_dev::cvt<float>(in0[o0]);
          v[g * 4 + e] = t0;
        }
      }
    }
  }
  float mx_p[4] = {-ember_dev::inf<float>(), -ember_dev::inf<float>(), -ember_dev::inf<float>(), -ember_dev::inf<float>()};
#pragma unroll
  for (int g = 0; g < 8; ++g) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (true) {
        const float x = v[g * 4 + e];
        const float y = float(x);
        mx_p[e] = ember_dev::MaxOp()(mx_p[e], y);
      }
    }
  }
  float mx = ember_dev::MaxOp()(ember_dev::MaxOp()(mx_p[0], mx_p[1]), ember_dev::MaxOp()(mx_p[2], mx_p[3]));
  mx = ember_dev::warp_reduce(mx, ember_dev::MaxOp());
  float sum_p[4] = {float(0), float(0), float(0), float(0)};
#pragma unroll
  for (int g = 0; g < 8; ++g) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (true) {
        const float x = v[g * 4 + e];
        const float y = float(ember_dev::exp(x - mx));
        v[g * 4 + e] = y;
        sum_p[e] = ember_dev::SumOp()(sum_p[e], y);
      }
    }
  }
  float sum = ember_dev::SumOp()(ember_dev::SumOp()(sum_p[0], sum_p[1]), ember_dev::SumOp()(sum_p[2], sum_p[3]));
  sum = ember_dev::warp_reduce(sum, ember_dev::SumOp());
  const float rsum = float(1) / sum;
  if (aligned) {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      const IDX j = g * 128 + lane * 4;
      if (j < 1024) {
        ember_dev::Vec<float, 4> wo;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const IDX r = j + e;
          const float x = v[g * 4 + e];
          const float rv = x * rsum;
          ember_dev::assign(wo.v[e], ember_dev::cvt<float>(rv));
        }
        *reinterpret_cast<ember_dev::Vec<float, 4>*>(out0 + c0 + j) = wo;
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < 8; ++g) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const IDX r = g * 128 + lane * 4 + e;
        if (r < 1024) {
          const float x = v[g * 4 + e];
          const float rv = x * rsum;
          ember_dev::assign(out0[c0 + r * 1], ember_dev::cvt<float>(rv));
        }
      }
    }
  }
}

// cuda_fused_native_layer_norm_1: layer_norm rows of Float[8192, 1024] (row %ln), 8192 rows of 1024, a warp per row, the row in registers

#include <cstdio>
#include <vector>
#include <algorithm>
#include <cmath>
int main() {
  const int rows = 8192; const long long n = (long long)rows * 1024;
  float *x, *y, *w, *b, *m, *r; int* flush; size_t fl = 256u << 20;
  cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4); cudaMalloc(&w, 4096); cudaMalloc(&b, 4096); cudaMalloc(&m, rows * 4); cudaMalloc(&r, rows * 4); cudaMalloc(&flush, fl);
  std::vector<float> h(n); for (long long i = 0; i < n; ++i) h[i] = (float)((i * 2654435761u) % 1000) / 100.f - 5.f;
  cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice);
  std::vector<float> hw(1024); for (int i = 0; i < 1024; ++i) hw[i] = 1.f + i * 1e-3f;
  cudaMemcpy(w, hw.data(), 4096, cudaMemcpyHostToDevice); cudaMemcpy(b, hw.data(), 4096, cudaMemcpyHostToDevice);
  auto timeit = [&](auto f) {
    std::vector<float> t; cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
    for (int i = 0; i < 80; ++i) {
      cudaMemsetAsync(flush, 0, fl); cudaEventRecord(s); f(); cudaEventRecord(e); cudaEventSynchronize(e);
      float ms; cudaEventElapsedTime(&ms, s, e); if (i >= 10) t.push_back(ms);
    }
    std::sort(t.begin(), t.end()); return t[t.size() / 2] * 1000;
  };
  std::vector<float> ref(n), got(n);
  auto err = [&] { cudaMemcpy(got.data(), y, n * 4, cudaMemcpyDeviceToHost); double mx = 0;
    for (long long i = 0; i < n; ++i) mx = std::max(mx, (double)std::fabs(got[i] - ref[i]) / std::max(1e-30, (double)std::fabs(ref[i]))); return mx; };
  for (int rpb : {1, 2, 4, 8}) {
    const int g = rows / rpb, bl = 32 * rpb;
    float la = timeit([&] { ln_A<<<g, bl>>>(x, w, b, y, m, r, 1); });
    cudaMemcpy(ref.data(), y, n * 4, cudaMemcpyDeviceToHost);
    float lb = timeit([&] { ln_C<<<g, bl>>>(x, w, b, y, m, r, 1); }); double elb = err();
    float sa = timeit([&] { sm_A<<<g, bl>>>(x, y, 1); });
    cudaMemcpy(ref.data(), y, n * 4, cudaMemcpyDeviceToHost);
    float sb = timeit([&] { sm_B<<<g, bl>>>(x, y, 1); }); double esb = err();
    printf("%d rows/block: layer norm as generated %.2f us, without storing mean and rstd %.2f (rel %.1e); softmax as generated %.2f, four partial max/sums %.2f (rel %.1e)\n", rpb, la, lb, elb, sa, sb, esb);
  }
  printf("copy 32 MiB: %.2f us\n", timeit([&] { cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice); }));
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
