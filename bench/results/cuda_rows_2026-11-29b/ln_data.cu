// The generated W3 layer norm (ln_variants.cu ln_A) and the standalone one (rows.cu) over the same
// data, zeros and varied values, interleaved rounds.
#include "../cuda_rows_2026-11-29/generated_prelude.cuh"

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
extern "C" __global__ void __launch_bounds__(256) ln_R(const float* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, float* __restrict__ out0, float* __restrict__ out1, float* __restrict__ out2, int aligned) {
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
  const float rstd = rsqrtf(sq / float(1024) + float(1.0000000000000001e-05));
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

template <typename T, typename Op> __device__ __forceinline__ T warp_reduce_nb(T v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
constexpr int kCols4 = 256;  // 1024 floats
template <bool S> __device__ __forceinline__ float4 ld(const float4* p) { if (S) return __ldcs(p); return *p; }
template <bool S> __device__ __forceinline__ void st(float4* p, float4 v) { if (S) __stcs(p, v); else *p = v; }
template <int TPR, int RPB> __device__ __forceinline__ float row_sum(float v, float* sm) {
#pragma unroll
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(~0u, v, o);
  if constexpr (TPR > 32) {
    constexpr int W = TPR / 32;
    const int r = threadIdx.x / TPR, w = (threadIdx.x % TPR) / 32, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) sm[r * W + w] = v;
    __syncthreads();
    float t = 0;
#pragma unroll
    for (int i = 0; i < W; ++i) t += sm[r * W + i];
    v = t;
  }
  return v;
}
template <int TPR, int RPB> __device__ __forceinline__ float row_max(float v, float* sm) {
#pragma unroll
  for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(~0u, v, o));
  if constexpr (TPR > 32) {
    constexpr int W = TPR / 32;
    const int r = threadIdx.x / TPR, w = (threadIdx.x % TPR) / 32, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) sm[r * W + w] = v;
    __syncthreads();
    float t = sm[r * W];
#pragma unroll
    for (int i = 1; i < W; ++i) t = fmaxf(t, sm[r * W + i]);
    v = t;
  }
  return v;
}
template <int TPR, int RPB, bool S, int OP>
__global__ void __launch_bounds__(TPR * RPB) rows(const float4* __restrict__ x, const float4* __restrict__ w,
                                                  const float4* __restrict__ b, float4* __restrict__ y, int nrows) {
  constexpr int N = kCols4 / TPR;
  __shared__ float sm[RPB * (TPR / 32 > 0 ? TPR / 32 : 1)];
  const int row = blockIdx.x * RPB + threadIdx.x / TPR, t = threadIdx.x % TPR;
  if (row >= nrows) return;  // whole rows only (nrows % RPB == 0 here)
  const float4* xr = x + (size_t)row * kCols4;
  float4 v[N];
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = ld<S>(xr + t + TPR * i);
  float4* yr = y + (size_t)row * kCols4;
  if (OP == 0) {
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < N; ++i) m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
    m = row_max<TPR, RPB>(m, sm);
    float s = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      v[i].x = __expf(v[i].x - m); v[i].y = __expf(v[i].y - m); v[i].z = __expf(v[i].z - m); v[i].w = __expf(v[i].w - m);
      s += v[i].x + v[i].y + v[i].z + v[i].w;
    }
    s = row_sum<TPR, RPB>(s, sm);
    const float r = 1.f / s;
#pragma unroll
    for (int i = 0; i < N; ++i) st<S>(yr + t + TPR * i, make_float4(v[i].x * r, v[i].y * r, v[i].z * r, v[i].w * r));
  } else {
    float s = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) s += v[i].x + v[i].y + v[i].z + v[i].w;
    const float mean = row_sum<TPR, RPB>(s, sm) / 1024;
    float q = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      float a = v[i].x - mean, c = v[i].y - mean, d = v[i].z - mean, e = v[i].w - mean;
      q += a * a + c * c + d * d + e * e;
    }
    const float rs = rsqrtf(row_sum<TPR, RPB>(q, sm) / 1024 + 1e-5f);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const float4 ww = w[t + TPR * i], bw = b[t + TPR * i];
      st<S>(yr + t + TPR * i, make_float4((v[i].x - mean) * rs * ww.x + bw.x, (v[i].y - mean) * rs * ww.y + bw.y,
                                          (v[i].z - mean) * rs * ww.z + bw.z, (v[i].w - mean) * rs * ww.w + bw.w));
    }
  }
}
#include <cmath>
int main() {
  const int nrows = 8192; const long long n = (long long)nrows * 1024;
  float *x, *y, *w, *b, *m, *r; int* flush; size_t fl = 256u << 20;
  cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4); cudaMalloc(&w, 4096); cudaMalloc(&b, 4096); cudaMalloc(&m, nrows * 4);
  cudaMalloc(&r, nrows * 4); cudaMalloc(&flush, fl);
  std::vector<float> h(n), hw(1024);
  for (long long i = 0; i < n; ++i) h[i] = (float)((i * 2654435761u) % 1000) / 100.f - 5.f;
  for (int i = 0; i < 1024; ++i) hw[i] = 1.f + i * 1e-3f;
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
  printf("%s, L2 %d MiB, %d SMs\n", p.name, p.l2CacheSize >> 20, p.multiProcessorCount);
  const float4 *X = (const float4*)x, *W = (const float4*)w, *B = (const float4*)b; float4* Y = (float4*)y;
  auto one = [&](auto f) {
    cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
    cudaMemsetAsync(flush, 0, fl); cudaEventRecord(s); f(); cudaEventRecord(e); cudaEventSynchronize(e);
    float ms; cudaEventElapsedTime(&ms, s, e); cudaEventDestroy(s); cudaEventDestroy(e); return ms * 1000;
  };
  for (int data = 0; data < 2; ++data) {
    if (data == 0) { cudaMemset(x, 0, n * 4); cudaMemset(w, 0, 4096); cudaMemset(b, 0, 4096); }
    else { cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice); cudaMemcpy(w, hw.data(), 4096, cudaMemcpyHostToDevice);
           cudaMemcpy(b, hw.data(), 4096, cudaMemcpyHostToDevice); }
    for (int rpb : {1, 4}) {
      std::vector<float> tg, ts, tc, tr;
      for (int i = 0; i < 90; ++i) {  // interleaved: generated, standalone, copy
        float a = one([&] { ln_A<<<nrows / rpb, 32 * rpb>>>(x, w, b, y, m, r, 1); });
        float c = one([&] { if (rpb == 1) rows<32, 1, false, 1><<<nrows, 32>>>(X, W, B, Y, nrows);
                            else rows<32, 4, false, 1><<<nrows / 4, 128>>>(X, W, B, Y, nrows); });
        float d = one([&] { cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice); });
        float e = one([&] { ln_R<<<nrows / rpb, 32 * rpb>>>(x, w, b, y, m, r, 1); });
        if (i >= 10) { tg.push_back(a); ts.push_back(c); tc.push_back(d); tr.push_back(e); }
      }
      auto med = [](std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
      printf("%s, %d row(s)/block: generated %.2f us, generated with rsqrtf %.2f us, standalone %.2f us, 32 MiB copy %.2f us\n",
             data ? "varied values" : "zeros", rpb, med(tg), med(tr), med(ts), med(tc));
    }
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
