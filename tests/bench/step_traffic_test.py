"""bench/step_traffic.py against a hand count: on gpt-mini the ops on the logits outside the matmuls move
36 bytes per logit (bf16 -> fp32 cast 2+4, log_softmax 4+4, nll_loss's gradient 4, log_softmax backward
4+4+4, the cast back 4+2), and the step bound is the sum of its classes' bounds."""
import json
import os
import subprocess
import sys
import tempfile

py, script = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "t.json")
    subprocess.run([py, script, "--workload", "gpt-mini", "--batch", "8", "--vocab", "1000", "--json", out], check=True,
                   stdout=subprocess.DEVNULL)
    t = json.load(open(out))
logits = 8 * 64 * 1000  # a vocabulary unlike the MLP's width (4 x 128 = 512), so only logits are that size
# nll_loss's backward also reads the int64 targets and two fp32 scalars (the incoming gradient, the total
# weight); its forward reads one log-probability per row, so it is no logits op.
expected = 36 * logits + 8 * 64 * 8 + 2 * 4
errors = []
if t["logits_elementwise_bytes"] != expected:
    errors.append(f"logits bytes {t['logits_elementwise_bytes']}, hand count {expected}")
if abs(t["step_lower_bound_ms"] - sum(c["ms_bound"] for c in t["classes"])) > 0.02:
    errors.append("the step bound is not the sum of the classes' bounds")
mm = [c for c in t["classes"] if c["class"] == "matmul / conv"]
if not mm or mm[0]["flops"] <= 0:
    errors.append("no matmul FLOPs counted")
if not 0 < t["mfu_upper_bound"] < 1:
    errors.append(f"mfu_upper_bound {t['mfu_upper_bound']}")
if errors:
    print("\n".join(errors))
    sys.exit(1)
print("ok", t["logits_elementwise_bytes"], t["step_lower_bound_ms"])
