#include "generated_prelude.cuh"

extern "C" __global__ void __launch_bounds__(256) softmax_A(const float* __restrict__ in0, float* __restrict__ out0, int aligned) {
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
          const float rv = x / sum;
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
          const float rv = x / sum;
          ember_dev::assign(out0[c0 + r * 1], ember_dev::cvt<float>(rv));
        }
      }
    }
  }
}

// cuda_fused_native_layer_norm_1: layer_norm rows of Float[8192, 1024] (row %ln), 8192 rows of 1024, a warp per row, the row in registers
extern "C" __global__ void __launch_bounds__(256) softmax_B(const float* __restrict__ in0, float* __restrict__ out0, int aligned) {
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
  const float rsum = 1.f / sum;
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
extern "C" __global__ void __launch_bounds__(256) softmax_C(const float* __restrict__ in0, float* __restrict__ out0, int aligned) {
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
        const float y = float(__expf(x - mx));
        v[g * 4 + e] = y;
        sum = ember_dev::SumOp()(sum, y);
      }
    }
  }
  sum = ember_dev::warp_reduce(sum, ember_dev::SumOp());
  const float rsum = 1.f / sum;
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
extern "C" __global__ void __launch_bounds__(256) softmax_D(const float* __restrict__ in0, float* __restrict__ out0, int aligned) {
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
        mx = fmaxf(mx, y);
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
          const float rv = x / sum;
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
          const float rv = x / sum;
          ember_dev::assign(out0[c0 + r * 1], ember_dev::cvt<float>(rv));
        }
      }
    }
  }
}

// cuda_fused_native_layer_norm_1: layer_norm rows of Float[8192, 1024] (row %ln), 8192 rows of 1024, a warp per row, the row in registers
extern "C" __global__ void __launch_bounds__(256) softmax_E(const float* __restrict__ in0, float* __restrict__ out0, int aligned) {
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
        const float y = float(__expf(x - mx));
        v[g * 4 + e] = y;
        sum = ember_dev::SumOp()(sum, y);
      }
    }
  }
  sum = ember_dev::warp_reduce(sum, ember_dev::SumOp());
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
          const float rv = x / sum;
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
          const float rv = x / sum;
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
int main() {
  const int rows = 8192; const long long n = (long long)rows * 1024;
  float *x, *y; int* flush; size_t fl = 256u << 20;
  cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4); cudaMalloc(&flush, fl);
  std::vector<float> h(n); for (long long i = 0; i < n; ++i) h[i] = (float)((i * 2654435761u) % 1000) / 100.f - 5.f;
  cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice);
  auto timeit = [&](auto f) {
    std::vector<float> t; cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
    for (int i = 0; i < 80; ++i) {
      cudaMemsetAsync(flush, 0, fl); cudaEventRecord(s); f(); cudaEventRecord(e); cudaEventSynchronize(e);
      float ms; cudaEventElapsedTime(&ms, s, e); if (i >= 10) t.push_back(ms);
    }
    std::sort(t.begin(), t.end()); return t[t.size() / 2] * 1000;
  };
  std::vector<float> ref(n), got(n);
  for (int rpb : {1, 4}) {
    const int g = rows / rpb, b = 32 * rpb;
    float ta = timeit([&] { softmax_A<<<g, b>>>(x, y, 1); });
    cudaMemcpy(ref.data(), y, n * 4, cudaMemcpyDeviceToHost);
    auto err = [&] { cudaMemcpy(got.data(), y, n * 4, cudaMemcpyDeviceToHost); double m = 0;
      for (long long i = 0; i < n; ++i) m = std::max(m, (double)std::abs(got[i] - ref[i]) / std::max(1e-30, (double)std::abs(ref[i]))); return m; };
    float tb = timeit([&] { softmax_B<<<g, b>>>(x, y, 1); }); double eb = err();
    float tc = timeit([&] { softmax_C<<<g, b>>>(x, y, 1); }); double ec = err();
    float td = timeit([&] { softmax_D<<<g, b>>>(x, y, 1); }); double ed = err();
    float te = timeit([&] { softmax_E<<<g, b>>>(x, y, 1); }); double ee = err();
    float t2 = timeit([&] { softmax_A<<<g, b>>>(x, y, 1); });
    printf("%d rows/block: A (as generated) %.2f us (again %.2f); B (x * (1/sum)) %.2f rel %.1e; C (B + __expf) %.2f rel %.1e; D (fmaxf) %.2f rel %.1e; E (__expf) %.2f rel %.1e\n",
           rpb, ta, t2, tb, eb, tc, ec, td, ed, te, ee);
  }
  printf("copy 32 MiB: %.2f us\n", timeit([&] { cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice); }));
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
