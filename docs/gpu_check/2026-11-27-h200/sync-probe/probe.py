"""Where the first family's host sync comes from: its training step under sync debug mode 'error'."""
import sys, traceback, torch
sys.path.insert(0, ".")
from workflow_src.atomic import read_config
from workflow_src.gpu_check.families import families
from workflow_src.gpu_check import device as measured
from workflow_src.model import precision as precisions

lines = open(torch.cuda.__file__).readlines()
print("torch/cuda/__init__.py 1255-1272:\n" + "".join(f"{i + 1}: {l}" for i, l in enumerate(lines) if 1254 <= i < 1272))
device = torch.device("cuda")
config = read_config("config.yaml")
family = next(f for f in families(config) if f.name.startswith("NMT enc 1x1024 dec 2x1024 softmax/ce V 50000->50000 batch 64"))
model, step = measured.full_size_step(family, precisions.resolve("auto", device), device)
measured.step_seconds(step, device)
torch.cuda.synchronize(device)
torch.cuda.set_sync_debug_mode("error")
try:
    for i in range(4):
        step()
        print("step", i, "no sync", flush=True)
except Exception:
    traceback.print_exc()
finally:
    torch.cuda.set_sync_debug_mode(0)
