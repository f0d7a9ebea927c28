import os
"""Check the intermediate claims of 19.5 on the corpus: |y_c - T| <= g(K+1,u_c) A + (K+1) 2^-124 max(1,|s|)."""
import json, math, struct, sys
from fractions import Fraction as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounded import *
VEC = os.path.join(os.environ.get('NWC_VECTORS', 'vectors'), '')
man=json.load(open(VEC+'manifest.json'))
arr=lambda d,f,s: list(struct.unpack('<%d%s'%(len(d)//s,f),d))
rd=lambda p: open(VEC+p,'rb').read()
ok=bad=0; worst=0
for v in man['vectors']:
    if not v['matvecs'] or v['input'] is None: continue
    M,K=v['rows'],v['cols']
    hb=[mv for mv in v['matvecs'] if 'bound' in mv]
    if not hb: continue
    raw=rd(v['input'])
    W=[bf16_to_float(w) for w in arr(raw,'H',2)] if v['elem']=='bf16' else [fp8_to_float(b) for b in raw]
    sc=arr(rd(v['fields']['scale']),'f',4) if 'scale' in v['fields'] else None
    for mv in hb:
        X=arr(rd(mv['activations']),'f',4); bias=arr(rd(mv['bias']),'f',4) if mv['bias'] else None
        Bf=arr(rd(mv['bound']),'d',8); Y=arr(rd(mv['output_f32']),'f',4)
        for n in range(mv['batch']):
            xc=X[n*K:(n+1)*K]
            for m in range(M):
                if math.isnan(Bf[n*M+m]): continue
                wr=W[m*K:(m+1)*K]; s=sc[m] if sc else 1.0; b=bias[m] if bias else 0.0
                S=sum((F(w)*F(x) for w,x in zip(wr,xc)),F(0))
                T=F(s)*S+F(b)
                _,B,A,_=bound_exact(wr,xc,s,b,True,True)
                lim=g(K+1,U_C)*A+(K+1)*F(1,2**124)*max(ONE,abs(F(s)))
                d=abs(F(Y[n*M+m])-T)
                if d<=lim: ok+=1
                else: bad+=1
                if lim: worst=max(worst,float(d/lim))
print('canonical within its 19.5 bound of T:',ok,'violations:',bad,'max ratio',worst)
