import torch, time
torch.manual_seed(0)
x=torch.randn(4,32,16,32,32); w=torch.randn(32,32,3,3,3); b=torch.randn(32)
y=torch.ops.aten.convolution(x,w,b,[1,1,1],[1,1,1],[1,1,1],False,[0],1); gy=torch.randn_like(y)
def t(name,f,n=7):
    f(); ts=[]
    for _ in range(n):
        t0=time.perf_counter(); f(); ts.append((time.perf_counter()-t0)*1e3)
    ts.sort(); print(f"{name:10s} min {ts[0]:9.2f}  med {ts[n//2]:9.2f} ms")
with torch.no_grad():
    t("forward", lambda: torch.ops.aten.convolution(x,w,b,[1,1,1],[1,1,1],[1,1,1],False,[0],1))
    t("backward", lambda: torch.ops.aten.convolution_backward(gy,x,w,[32],[1,1,1],[1,1,1],[1,1,1],False,[0],1,[True,True,True]))
