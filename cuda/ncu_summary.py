"""One line per kernel launch from an `ncu` text report (device-run.sh exec-ncu): duration, DRAM
throughput, issue activity, warps, occupancy, registers, instructions, shared-memory wavefronts and
the three largest stall reasons (cycles per issued instruction)."""
import re
import sys

KEEP = {
    "Duration": "dur",
    "DRAM Throughput": "dram%",
    "Issue Slots Busy": "issue%",
    "No Eligible": "noelig%",
    "Active Warps Per Scheduler": "warps/sch",
    "Eligible Warps Per Scheduler": "elig/sch",
    "Warp Cycles Per Issued Instruction": "cyc/inst",
    "Achieved Occupancy": "occ%",
    "Registers Per Thread": "regs",
    "smsp__inst_executed.sum": "inst",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": "smem_wf",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "bank_confl",
    "dram__bytes_read.sum": "dram_read",
}
rows, cur = [], None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^  (\w+)\s*(\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\))", line)
    if m:
        cur = {"name": m.group(1), "grid": m.group(2), "stall": {}}
        rows.append(cur)
        continue
    if cur is None:
        continue
    parts = re.split(r"\s{2,}", line.strip())
    if len(parts) < 2:
        continue
    name, value = parts[0], parts[-1]
    unit = parts[1] if len(parts) == 3 else ""
    s = re.match(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio", name)
    if s:
        try:
            cur["stall"][s.group(1)] = float(value.replace(",", ""))
        except ValueError:
            pass
    elif name in KEEP:
        cur[KEEP[name]] = value + (unit if name == "Duration" or name.startswith("dram__bytes") else "")
for r in rows:
    top = sorted(r["stall"].items(), key=lambda kv: -kv[1])[:4]
    cols = " ".join(f"{k}={r.get(k, '-')}" for k in KEEP.values())
    print(f"{r['name']} {r['grid']} {cols} stalls: " + ", ".join(f"{k} {v:.2f}" for k, v in top))
