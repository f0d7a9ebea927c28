"""Memory roofs of the device (run on the device machine; torch): a device-to-device copy (bytes
read + written), a write-only fill and a read-only reduction, 4 GiB buffers (far past the L2),
medians of 20 timed launches after 3 warm-ups. Prints TB/s; the dequant ceiling at 3.5 bytes moved
per weight (1.5 read, 2 written) follows as copy * 2 / 3.5 TB/s of BF16 output."""
import torch

n = 4 << 30
a = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda")
b = torch.empty_like(a)


def median_ms(f):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(20):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        f()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    ts.sort()
    return ts[len(ts) // 2]


copy = 2 * n / median_ms(lambda: b.copy_(a)) / 1e9
fill = n / median_ms(lambda: b.fill_(7)) / 1e9
a32 = a.view(torch.int32)
read = n / median_ms(lambda: torch.amax(a32)) / 1e9
print(f"copy {copy:.2f} TB/s (read + write), fill {fill:.2f} TB/s (write), amax {read:.2f} TB/s (read)")
print(f"dequant ceiling at 3.5 B moved per weight (copy rate): {copy * 2 / 3.5:.2f} TB/s of BF16 output")
