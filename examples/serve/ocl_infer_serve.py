"""ocl-infer under Ray Serve: one InferenceSession per replica, HTTP with JSON or raw-tensor
(.npy) bodies, dynamic request batching by Ray Serve's own @serve.batch.

    from ocl_infer_serve import build_app
    serve.run(build_app("model.onnx", replicas=2, devices=["0", "1"]), route_prefix="/infer")

Requests (POST to the route):
  - Content-Type application/json: {"inputs": {NAME: nested list}} (or {"inputs": nested list}
    for a single-input model); the reply is {"outputs": {NAME: nested list}}.
  - Content-Type application/x-npy: the body is one .npy array for the single input; the reply is
    the first output as .npy.
Each request carries one or more samples along the first (batch) dim; requests that arrive
together are concatenated into one batch of at most `max_batch_size` samples when the model's
first input dim is open, and run one by one otherwise.

Scaling out: the same application runs on a Ray cluster unchanged (`ray start --head` on one
machine, `ray start --address=HEAD:6379` on the others, then `serve.run` against it): replicas
are placed on the cluster's nodes, each making its own session on its node's device. A replica
picks its device from `devices` by its rank (replica k takes devices[k % len(devices)]); with
`num_gpus` in `ray_actor_options` Ray also counts GPUs per node.
"""

import asyncio
import io
import json
from typing import Dict, List, Optional, Sequence

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


@serve.deployment
class OclInferDeployment:
    def __init__(self, model_path: str, devices: Optional[Sequence[str]] = None, precision: str = "fp32",
                 cache_dir: Optional[str] = None):
        import ocl_infer

        device = None
        if devices:
            context = serve.get_replica_context()
            rank = getattr(context, "rank", None)
            rank = rank if isinstance(rank, int) else abs(hash(str(context.replica_id)))
            device = str(devices[rank % len(devices)])
        self.session = ocl_infer.InferenceSession(model_path, device=device, precision=precision,
                                                  cache_dir=cache_dir)
        self.inputs = self.session.get_inputs()
        self.outputs = [o.name for o in self.session.get_outputs()]
        # Requests are batched only along an open first dim of every input.
        self.batchable = all(i.shape and not isinstance(i.shape[0], int) for i in self.inputs)
        self.device_name = self.session.device["name"]

    def _run(self, feeds: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        return dict(zip(self.outputs, self.session.run(None, feeds)))

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.005)
    async def _batched(self, requests: List[Dict[str, np.ndarray]]) -> List[Dict[str, np.ndarray]]:
        # The session releases the GIL while the device works: run it off the event loop so that
        # the replica keeps accepting requests (and forming the next batch) meanwhile.
        if not self.batchable or len(requests) == 1:
            return [await asyncio.to_thread(self._run, r) for r in requests]
        sizes = [next(iter(r.values())).shape[0] for r in requests]
        if any(len({v.shape[1:] for v in (r[name] for r in requests)}) != 1 for name in requests[0]):
            return [await asyncio.to_thread(self._run, r) for r in requests]  # shapes differ
        feeds = {name: np.concatenate([r[name] for r in requests]) for name in requests[0]}
        outputs = await asyncio.to_thread(self._run, feeds)
        results, start = [], 0
        for n in sizes:
            results.append({k: v[start:start + n] for k, v in outputs.items()})
            start += n
        return results

    def _parse(self, body: bytes, content_type: str) -> Dict[str, np.ndarray]:
        if content_type.startswith("application/x-npy"):
            if len(self.inputs) != 1:
                raise ValueError("raw .npy bodies are for single-input models; send JSON")
            return {self.inputs[0].name: np.load(io.BytesIO(body), allow_pickle=False)}
        data = json.loads(body)
        inputs = data["inputs"] if isinstance(data, dict) and "inputs" in data else data
        if not isinstance(inputs, dict):
            if len(self.inputs) != 1:
                raise ValueError("this model has several inputs: send {\"inputs\": {name: values}}")
            inputs = {self.inputs[0].name: inputs}
        dtypes = {i.name: i.dtype for i in self.inputs}
        return {k: np.asarray(v, dtype=dtypes.get(k, "float32")) for k, v in inputs.items()}

    async def __call__(self, request: Request):
        content_type = request.headers.get("content-type", "application/json")
        try:
            feeds = self._parse(await request.body(), content_type)
            outputs = await self._batched(feeds)
        except Exception as error:  # a bad request gets a 400 with the reason, not a dead replica
            return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=400)
        if content_type.startswith("application/x-npy"):
            buffer = io.BytesIO()
            np.save(buffer, outputs[self.outputs[0]])
            return Response(buffer.getvalue(), media_type="application/x-npy")
        return JSONResponse({"outputs": {k: v.tolist() for k, v in outputs.items()},
                             "device": self.device_name})


def build_app(model_path: str, replicas: int = 1, devices: Optional[Sequence[str]] = None,
              precision: str = "fp32", cache_dir: Optional[str] = None, max_ongoing_requests: int = 32):
    """The Serve application: `replicas` copies of the deployment, one CPU each for Ray's
    accounting."""
    return OclInferDeployment.options(num_replicas=replicas, max_ongoing_requests=max_ongoing_requests,
                                      ray_actor_options={"num_cpus": 1}).bind(
        model_path, devices, precision, cache_dir)
