#!/usr/bin/env python3
"""Compile the execution-layout kernels with NVRTC (no GPU needed) and report ptxas resources.

Usage: python3 cuda/exec/nvrtc_check.py [--cubin] [--sass KERNEL ...]
(--cubin writes cuda/exec/build/exec.cubin for the harness: no compile time on the device)
Needs libnvrtc.so.13 (`bash cuda/ci-nvrtc.sh` prints its folder) and, for the resource report,
ptxas / nvdisasm from the PyPI wheels nvidia-cuda-nvcc / nvidia-cuda-nvdisasm unpacked under
target/tools (see cuda/exec/NOTES.md). Options are the ones the harness and the crate use.
"""
import ctypes
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCES = ["exec_decode.cu", "exec_matvec.cu", "exec_mma.cu", "exec_dequant.cu", "exec_encode.cu", "exec_stream.cu", "exec_v3.cu"]
OPTIONS = ["--gpu-architecture=compute_90", "--fmad=false", "--ftz=false", "--prec-div=true",
           "--prec-sqrt=true", "-std=c++17"]


def source():
    return "\n".join(open(os.path.join(HERE, f)).read() for f in SOURCES)


def nvrtc_ptx(src):
    lib = os.environ.get("NVRTC_LIB", os.path.join(ROOT, "target/nvrtc-cache/nvidia/cu13/lib/libnvrtc.so.13"))
    nv = ctypes.CDLL(lib)
    prog = ctypes.c_void_p()
    rc = nv.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"exec.cu", 0, None, None)
    assert rc == 0, rc
    opts = (ctypes.c_char_p * len(OPTIONS))(*[o.encode() for o in OPTIONS])
    rc = nv.nvrtcCompileProgram(prog, len(OPTIONS), opts)
    n = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetProgramLog(prog, log)
    if log.value.strip():
        print(log.value.decode(), file=sys.stderr)
    if rc != 0:
        sys.exit(f"NVRTC failed ({rc})")
    nv.nvrtcGetPTXSize(prog, ctypes.byref(n))
    ptx = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetPTX(prog, ptx)
    return ptx.value.decode()


def main():
    ptx = nvrtc_ptx(source())
    tools = os.path.join(ROOT, "target/tools/nvidia/cu13/bin")
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "exec.ptx")
        open(p, "w").write(ptx)
        cubin = os.path.join(d, "exec.cubin")
        out = subprocess.run([os.path.join(tools, "ptxas"), "-arch=sm_90", "-v", p, "-o", cubin],
                             capture_output=True, text=True)
        if out.returncode:
            sys.exit(out.stderr)
        if "--cubin" in sys.argv:
            os.makedirs(os.path.join(HERE, "build"), exist_ok=True)
            open(os.path.join(HERE, "build/exec.cubin"), "wb").write(open(cubin, "rb").read())
            open(os.path.join(HERE, "build/exec.ptx"), "w").write(ptx)
        name = None
        for line in out.stderr.splitlines():
            m = re.search(r"Compiling entry function '(\w+)'", line)
            if m:
                name = m.group(1)
            m = re.search(r"Used (\d+) registers", line)
            if m and name:
                spill = re.findall(r"(\d+) bytes spill", out.stderr.split(f"'{name}'", 1)[1].split("Compiling", 1)[0])
                print(f"{name:28s} regs {m.group(1):>4s}  spills {'/'.join(spill) or '0'}")
        if "--sass" in sys.argv:
            sass = subprocess.run([os.path.join(tools, "nvdisasm"), "-c", cubin], capture_output=True, text=True).stdout
            for k in sys.argv[sys.argv.index("--sass") + 1:]:
                body = sass.split(f".text.{k}:", 1)[1].split(".section", 1)[0]
                ins = [l for l in body.splitlines() if re.match(r"\s+/\*[0-9a-f]{4,}\*/", l)]
                ops = {}
                for l in ins:
                    op = l.split("*/", 1)[1].strip().lstrip("@!P0123456789T ").split()[0].split(".")[0]
                    ops[op] = ops.get(op, 0) + 1
                print(k, len(ins), "instructions;", sorted(ops.items(), key=lambda kv: -kv[1])[:25])
                open(os.path.join(d, "x"), "w")
                if os.environ.get("SASS_DUMP"):
                    open(os.environ["SASS_DUMP"] + f".{k}.sass", "w").write(body)


if __name__ == "__main__":
    main()
