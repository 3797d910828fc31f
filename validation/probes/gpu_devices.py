"""CUDA devices as Paddle sees them (JSON)."""

import json

import paddle

count = paddle.device.cuda.device_count()
names = [paddle.device.cuda.get_device_name(i) for i in range(count)]
capability = [list(paddle.device.cuda.get_device_capability(i)) for i in range(count)]
x = paddle.ones([256, 256], dtype="float32").cuda() if count else None
ok = bool(count) and float((x @ x).sum()) == 256.0 ** 3
print(json.dumps({"count": count, "names": names, "capability": capability, "matmul_ok": ok}))
