// Layer norm over [8192,1024] float (W3) and W1's chain after a 256 MiB memset (the race's
// L2 flush): plain loads/stores against streaming (evict-first) loads and stores.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
template <int L> __device__ __forceinline__ float4 ld(const float4* p) {
  if (L == 0) return *p;
  if (L == 1) return __ldcs(p);
  return __ldlu(p);
}
template <int S> __device__ __forceinline__ void st(float4* p, float4 v) { if (S == 0) *p = v; else __stcs(p, v); }
template <int L, int S> __global__ void ln(const float4* __restrict__ x, const float4* __restrict__ w, const float4* __restrict__ b, float4* __restrict__ y, int rows) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= rows) return;
  const float4* xr = x + (size_t)warp * 256; float4 v[8]; float s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) { v[i] = ld<L>(xr + lane + 32 * i); s += v[i].x + v[i].y + v[i].z + v[i].w; }
#pragma unroll
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(~0u, s, o);
  const float mean = s / 1024; float q = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) { float a = v[i].x - mean, bb = v[i].y - mean, c = v[i].z - mean, d = v[i].w - mean; q += a*a + bb*bb + c*c + d*d; }
#pragma unroll
  for (int o = 16; o; o >>= 1) q += __shfl_xor_sync(~0u, q, o);
  const float rs = rsqrtf(q / 1024 + 1e-5f);
  float4* yr = y + (size_t)warp * 256;
#pragma unroll
  for (int i = 0; i < 8; ++i) { float4 ww = w[lane + 32 * i], bw = b[lane + 32 * i]; float4 o;
    o.x = (v[i].x - mean) * rs * ww.x + bw.x; o.y = (v[i].y - mean) * rs * ww.y + bw.y; o.z = (v[i].z - mean) * rs * ww.z + bw.z; o.w = (v[i].w - mean) * rs * ww.w + bw.w;
    st<S>(yr + lane + 32 * i, o); }
}
__device__ __forceinline__ float relu(float v){ return v != v ? v : (v > 0.f ? v : 0.f); }
__device__ __forceinline__ float clampmax(float v, float m){ return v != v ? v : fminf(v, m); }
__device__ __forceinline__ float qdiv(float a, float b){ float r; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b)); return a * r; }
__device__ __forceinline__ float chain(float a) { float v = relu(a*2.f+1.f)*a - 0.5f; return qdiv(1.f, 1.f+expf(-v)) * tanhf(a) + clampmax(expf(a), 10.f); }
template <int L, int S> __global__ void w1(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    float4 a = ld<L>(x + i); float4 r; r.x = chain(a.x); r.y = chain(a.y); r.z = chain(a.z); r.w = chain(a.w); st<S>(y + i, r); }
}
template <int L, int S> __global__ void cp(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) st<S>(y + i, ld<L>(x + i));
}
int main() {
  const int rows = 8192; const long long n = (long long)rows * 1024, n4 = n / 4; float *x, *y, *w, *b; int* flush; size_t fl = 256u << 20;
  cudaMalloc(&x, n*4*2); cudaMalloc(&y, n*4*2); cudaMalloc(&w, 4096); cudaMalloc(&b, 4096); cudaMalloc(&flush, fl);
  cudaMemset(x, 0, n*8); cudaMemset(w, 0, 4096); cudaMemset(b, 0, 4096);
  auto timeit = [&](auto f) { std::vector<float> t; cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
    for (int i = 0; i < 60; ++i) { cudaMemsetAsync(flush, 0, fl); cudaEventRecord(s); f(); cudaEventRecord(e); cudaEventSynchronize(e);
      float ms; cudaEventElapsedTime(&ms, s, e); if (i >= 10) t.push_back(ms); } std::sort(t.begin(), t.end()); return t[t.size()/2]*1000; };
  for (int r = 0; r < 2; ++r) {
    for (int bs : {128, 256}) {
      int g = rows * 32 / bs;
      printf("W3 ln bs%d plain %.2f  ldcs %.2f  ldcs+stcs %.2f  ldlu %.2f  ldlu+stcs %.2f us\n", bs,
        timeit([&]{ ln<0,0><<<g, bs>>>((float4*)x, (float4*)w, (float4*)b, (float4*)y, rows); }),
        timeit([&]{ ln<1,0><<<g, bs>>>((float4*)x, (float4*)w, (float4*)b, (float4*)y, rows); }),
        timeit([&]{ ln<1,1><<<g, bs>>>((float4*)x, (float4*)w, (float4*)b, (float4*)y, rows); }),
        timeit([&]{ ln<2,0><<<g, bs>>>((float4*)x, (float4*)w, (float4*)b, (float4*)y, rows); }),
        timeit([&]{ ln<2,1><<<g, bs>>>((float4*)x, (float4*)w, (float4*)b, (float4*)y, rows); }));
    }
    const long long m4 = 2 * n4; int g = (int)(m4 / 256);
    printf("W1 chain  plain %.2f  ldcs %.2f  ldcs+stcs %.2f  ldlu+stcs %.2f us\n",
      timeit([&]{ w1<0,0><<<g, 256>>>((float4*)x, (float4*)y, m4); }), timeit([&]{ w1<1,0><<<g, 256>>>((float4*)x, (float4*)y, m4); }),
      timeit([&]{ w1<1,1><<<g, 256>>>((float4*)x, (float4*)y, m4); }), timeit([&]{ w1<2,1><<<g, 256>>>((float4*)x, (float4*)y, m4); }));
    printf("copy 64MiB plain %.2f  ldcs+stcs %.2f  cudaMemcpy %.2f us\n",
      timeit([&]{ cp<0,0><<<g, 256>>>((float4*)x, (float4*)y, m4); }), timeit([&]{ cp<1,1><<<g, 256>>>((float4*)x, (float4*)y, m4); }),
      timeit([&]{ cudaMemcpyAsync(y, x, n*8, cudaMemcpyDeviceToDevice); }));
    printf("W3-size copy 32MiB plain %.2f  ldcs+stcs %.2f us\n",
      timeit([&]{ cp<0,0><<<g/2, 256>>>((float4*)x, (float4*)y, n4); }), timeit([&]{ cp<1,1><<<g/2, 256>>>((float4*)x, (float4*)y, n4); }));
  }
}
