"""The Python package ocl_infer against numpy references and onnxruntime's API conventions.

Run through ctest (test `python_api`, tests/run_python_tests.sh), which puts build/python first on
sys.path; models are written with onnx.helper into a temporary folder. Every numerical check
compares with numpy (exact for integer and data-movement ops, 1e-5 relative for float math) or,
where stated, with the float32 run of the same model.
"""

import json
import os
import threading

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ocl_infer  # noqa: E402

OPSET = [helper.make_opsetid("", 13)]


def save(tmp_path, name, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="ocl-infer tests")
    model.ir_version = 8
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(model, path)
    return path


def vinfo(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    m = {}
    # Dynamic batch and width, symbolic names: y = x * 2 + b, z = relu(x).
    b = numpy_helper.from_array(np.linspace(-1, 1, 3, dtype=np.float32).reshape(1, 3, 1), "b")
    two = numpy_helper.from_array(np.array(2, dtype=np.float32), "two")
    m["dynamic"] = save(d, "dynamic", [
        helper.make_node("Mul", ["x", "two"], ["x2"]),
        helper.make_node("Add", ["x2", "b"], ["y"]),
        helper.make_node("Relu", ["x"], ["z"]),
    ], [vinfo("x", TensorProto.FLOAT, ["batch", 3, "width"])],
        [vinfo("y", TensorProto.FLOAT, ["batch", 3, "width"]), vinfo("z", TensorProto.FLOAT, ["batch", 3, "width"])],
        [b, two])
    # One Identity+Add per integer / float dtype: exact results.
    for elem, name in ((TensorProto.INT64, "int64"), (TensorProto.INT32, "int32"), (TensorProto.INT8, "int8"),
                       (TensorProto.UINT8, "uint8"), (TensorProto.FLOAT16, "float16"),
                       (TensorProto.DOUBLE, "float64")):
        m[name] = save(d, f"add_{name}", [helper.make_node("Add", ["a", "c"], ["s"])],
                       [vinfo("a", elem, [2, 5]), vinfo("c", elem, [2, 5])], [vinfo("s", elem, [2, 5])])
    m["bool"] = save(d, "logic", [helper.make_node("And", ["p", "q"], ["r"]), helper.make_node("Not", ["r"], ["n"])],
                     [vinfo("p", TensorProto.BOOL, [7]), vinfo("q", TensorProto.BOOL, [7])],
                     [vinfo("r", TensorProto.BOOL, [7]), vinfo("n", TensorProto.BOOL, [7])])
    # Gather with int64 indices (a token lookup).
    table = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "table")
    m["gather"] = save(d, "gather", [helper.make_node("Gather", ["table", "ids"], ["emb"])],
                       [vinfo("ids", TensorProto.INT64, ["n"])], [vinfo("emb", TensorProto.FLOAT, ["n", 4])], [table])
    # A small conv net for fp16, profiling, tuning and quantization.
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 8, 1, 1)).astype(np.float32) * 0.3, "w2")
    m["conv"] = save(d, "conv", [
        helper.make_node("Conv", ["img", "w"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"]),
        helper.make_node("GlobalAveragePool", ["c2"], ["out"]),
    ], [vinfo("img", TensorProto.FLOAT, [1, 3, 16, 16])], [vinfo("out", TensorProto.FLOAT, [1, 4, 1, 1])], [w, w2])
    m["conv_weights"] = (numpy_helper.to_array(w), numpy_helper.to_array(w2))
    # Operators this runtime does not have, all listed in one error.
    m["unsupported"] = save(d, "unsupported", [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("FancyOp", ["r"], ["f"], domain="example.custom"),
        helper.make_node("OtherOp", ["f"], ["y"], domain="example.custom"),
    ], [vinfo("x", TensorProto.FLOAT, [2])], [vinfo("y", TensorProto.FLOAT, [2])])
    return m


def conv_reference(img, w, w2):
    n, c, h, wd = img.shape
    padded = np.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1)))
    c1 = np.zeros((1, w.shape[0], h, wd), np.float64)
    for y in range(h):
        for x in range(wd):
            patch = padded[0, :, y:y + 3, x:x + 3].astype(np.float64)
            c1[0, :, y, x] = np.tensordot(w, patch, axes=([1, 2, 3], [0, 1, 2]))
    r1 = np.maximum(c1, 0)
    c2 = np.einsum("oc,nchw->nohw", w2[:, :, 0, 0].astype(np.float64), r1)
    return c2.mean(axis=(2, 3), keepdims=True)


def test_version_devices_and_catalog():
    assert isinstance(ocl_infer.__version__, str) and ocl_infer.__version__.count(".") == 2
    devices = ocl_infer.list_devices()
    assert devices and {"index", "name", "type", "driver_version"} <= set(devices[0])
    assert ocl_infer.get_device() in ("CPU", "GPU")
    catalog = ocl_infer.operator_catalog()
    names = {o["op_type"] if o["domain"] == "ai.onnx" else o["domain"] + "." + o["op_type"] for o in catalog}
    assert names == set(ocl_infer.supported_operators())
    assert {"Conv", "LSTM", "If", "Loop"} <= names


def test_inputs_outputs_like_onnxruntime(models):
    sess = ocl_infer.InferenceSession(models["dynamic"], providers=["CPUExecutionProvider"])
    (x,) = sess.get_inputs()
    assert (x.name, x.type, x.shape) == ("x", "tensor(float)", ["batch", 3, "width"])
    assert [(o.name, o.type, o.shape) for o in sess.get_outputs()] == [
        ("y", "tensor(float)", ["batch", 3, "width"]), ("z", "tensor(float)", ["batch", 3, "width"])]
    types = {ocl_infer.InferenceSession(models[k]).get_inputs()[0].type for k in ("int64", "float16", "bool")}
    assert types == {"tensor(int64)", "tensor(float16)", "tensor(bool)"}


def test_dynamic_shapes_and_output_selection(models):
    sess = ocl_infer.InferenceSession(models["dynamic"])
    b = np.linspace(-1, 1, 3, dtype=np.float32).reshape(1, 3, 1)
    for shape in ((1, 3, 5), (4, 3, 17), (2, 3, 1)):
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
        y, z = sess.run(None, {"x": x})
        np.testing.assert_allclose(y, x * 2 + b, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(z, np.maximum(x, 0))
        (z_only,) = sess.run(["z"], {"x": x})
        np.testing.assert_array_equal(z_only, z)
        z2, y2 = sess.run(["z", "y"], {"x": x})
        np.testing.assert_array_equal(y2, y)
        np.testing.assert_array_equal(z2, z)
    # An intermediate value by name (not a model output): fetched.
    x = np.ones((1, 3, 2), np.float32)
    names = [v for n in sess.executed_nodes() for v in n["outputs"]]
    inner = [v for v in names if v not in ("y", "z")]
    if inner:
        (value,) = sess.run([inner[0]], {"x": x})
        assert value.shape[0] == 1


def test_alternating_shapes_keep_their_plans(models):
    # Shapes that come back take their kept plan (stats: plan_reuses); every run's result is its own
    # input's, with the default shape_generic and with it off and on from the start.
    b = np.linspace(-1, 1, 3, dtype=np.float32).reshape(1, 3, 1)
    shapes = [(1, 3, 5), (4, 3, 17), (1, 3, 5), (2, 3, 9), (4, 3, 17), (1, 3, 5)]
    for generic in (-1, 0, 1):
        sess = ocl_infer.InferenceSession(models["dynamic"], shape_generic=generic)
        for k, shape in enumerate(shapes):
            x = np.random.default_rng(k).standard_normal(shape).astype(np.float32)
            y, z = sess.run(None, {"x": x})
            np.testing.assert_allclose(y, x * 2 + b, rtol=1e-6, atol=1e-6)
            np.testing.assert_array_equal(z, np.maximum(x, 0))
        stats = sess.stats()
        assert stats["plan_reuses"] == 3 and stats["plans_kept"] == 2, (generic, stats)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "float16", "float64"])
def test_dtypes_exact(models, dtype):
    sess = ocl_infer.InferenceSession(models[dtype])
    rng = np.random.default_rng(1)
    a = rng.integers(-20 if dtype[0] != "u" else 0, 20, (2, 5)).astype(dtype)
    c = rng.integers(-20 if dtype[0] != "u" else 0, 20, (2, 5)).astype(dtype)
    (s,) = sess.run(None, {"a": a, "c": c})
    assert s.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(s, a + c)


def test_bool_and_int64_gather(models):
    sess = ocl_infer.InferenceSession(models["bool"])
    p = np.array([1, 0, 1, 1, 0, 1, 0], bool)
    q = np.array([1, 1, 0, 1, 0, 1, 1], bool)
    r, n = sess.run(None, {"p": p, "q": q})
    assert r.dtype == np.bool_
    np.testing.assert_array_equal(r, p & q)
    np.testing.assert_array_equal(n, ~(p & q))
    sess = ocl_infer.InferenceSession(models["gather"])
    ids = np.array([3, 0, 9, 3], np.int64)
    (emb,) = sess.run(None, {"ids": ids})
    np.testing.assert_array_equal(emb, np.arange(40, dtype=np.float32).reshape(10, 4)[ids])
    with pytest.raises(ocl_infer.InputError):  # out of range: an error, not silent zeros
        sess.run(None, {"ids": np.array([10], np.int64)})


def test_non_contiguous_and_list_inputs(models):
    sess = ocl_infer.InferenceSession(models["dynamic"])
    big = np.random.default_rng(2).standard_normal((3, 6, 9)).astype(np.float32)
    view = big[:, ::2, ::3]  # strided
    transposed = np.ascontiguousarray(big[:2, :3, :4]).transpose(0, 1, 2)[:, :, ::-1]
    for x in (view, transposed):
        assert not x.flags.c_contiguous
        y, z = sess.run(None, {"x": x})
        np.testing.assert_array_equal(z, np.maximum(np.ascontiguousarray(x), 0))
    y, z = sess.run(None, {"x": [[[1.0, -2.0]] * 3]})  # nested lists take the input's type
    np.testing.assert_array_equal(z, [[[1.0, 0.0]] * 3])
    # A 0-d array stays 0-d (a scalar input such as a sample rate).
    assert ocl_infer._as_feed("s", np.array(5, np.int64)).shape == ()
    assert ocl_infer._as_feed("s", np.arange(6)[::2]).flags.c_contiguous


def test_model_from_bytes_and_sess_options(models):
    with open(models["dynamic"], "rb") as f:
        data = f.read()
    opts = ocl_infer.SessionOptions()
    opts.graph_optimization_level = 0  # onnxruntime's name
    opts.intra_op_num_threads = 2      # accepted, no meaning here
    sess = ocl_infer.InferenceSession(data, opts)
    assert sess.get_session_options().optimization_level == 0
    x = np.ones((1, 3, 2), np.float32)
    y, _ = sess.run(None, {"x": x})
    np.testing.assert_allclose(y, x * 2 + np.linspace(-1, 1, 3, dtype=np.float32).reshape(1, 3, 1), rtol=1e-6)


def test_errors_are_python_exceptions(models, tmp_path):
    assert issubclass(ocl_infer.KernelBuildError, ocl_infer.DeviceError)
    for cls in (ocl_infer.ModelError, ocl_infer.UnsupportedError, ocl_infer.InputError, ocl_infer.DeviceError):
        assert issubclass(cls, ocl_infer.Error) and issubclass(cls, RuntimeError)
    with pytest.raises(ocl_infer.ModelError, match="cannot open"):
        ocl_infer.InferenceSession(str(tmp_path / "missing.onnx"))
    with pytest.raises(ocl_infer.ModelError):
        ocl_infer.InferenceSession(b"\x08\x07garbage that is not a model")
    with open(models["conv"], "rb") as f:
        truncated = f.read()[:300]
    with pytest.raises(ocl_infer.ModelError):
        ocl_infer.InferenceSession(truncated)
    with pytest.raises(ocl_infer.UnsupportedError) as info:
        ocl_infer.InferenceSession(models["unsupported"])
    assert "FancyOp" in str(info.value) and "OtherOp" in str(info.value)
    with pytest.raises(ocl_infer.InputError, match="precision"):
        ocl_infer.InferenceSession(models["dynamic"], precision="int4")
    with pytest.raises(TypeError, match="unexpected keyword"):
        ocl_infer.InferenceSession(models["dynamic"], no_such_option=1)
    sess = ocl_infer.InferenceSession(models["dynamic"])
    x = np.ones((1, 3, 2), np.float32)
    with pytest.raises(ocl_infer.InputError):
        sess.run(None, {})                                   # missing input
    with pytest.raises(ocl_infer.InputError):
        sess.run(None, {"x": x.astype(np.int32)})            # wrong dtype
    with pytest.raises(ocl_infer.InputError):
        sess.run(None, {"x": np.ones((3, 2), np.float32)})   # wrong rank
    with pytest.raises(ocl_infer.InputError):
        sess.run(None, {"x": np.ones((1, 4, 2), np.float32)})  # fixed dim differs
    with pytest.raises(ocl_infer.InputError):
        sess.run(["no_such_output"], {"x": x})
    with pytest.raises(ocl_infer.InputError):
        sess.run(None, {"x": np.array(["a", "b"])})           # strings
    with pytest.raises(ocl_infer.InputError):
        sess.run(None, {"x": np.ones((1, 3, 2), np.complex64)})
    with pytest.raises(ocl_infer.InputError, match="GiB of host memory"):  # 64 TiB, broadcast
        sess.run(None, {"x": np.broadcast_to(np.float32(1), (1, 3, 2**44 // 3))})
    with pytest.raises(ocl_infer.InputError, match="is None"):
        sess.run(None, {"x": None})
    with pytest.raises(ocl_infer.InputError):
        sess.run(None, [x])                                   # not a dict
    # The session still works after every error.
    y, _ = sess.run(None, {"x": x})
    assert y.shape == (1, 3, 2)
    with pytest.raises(ocl_infer.DeviceError):
        ocl_infer.InferenceSession(models["dynamic"], device="no device has this name")


def test_threads_share_one_session(models):
    sess = ocl_infer.InferenceSession(models["dynamic"])
    inputs = [np.random.default_rng(k).standard_normal((1 + k % 3, 3, 8 + k)).astype(np.float32) for k in range(8)]
    expected = [sess.run(None, {"x": x}) for x in inputs]
    failures = []

    def worker(t):
        try:
            for i in range(25):
                k = (t * 5 + i) % len(inputs)
                got = sess.run(None, {"x": inputs[k]})
                for g, e in zip(got, expected[k]):
                    if g.shape != e.shape or not np.array_equal(g, e):
                        failures.append((t, i, k))
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append((t, repr(error)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures


def test_release_shared_contexts(models):
    # A session made before the release keeps its context; the next session makes a new one.
    a = ocl_infer.InferenceSession(models["dynamic"])
    x = np.random.default_rng(3).standard_normal((2, 3, 5)).astype(np.float32)
    want = a.run(None, {"x": x})
    ocl_infer.release_shared_contexts()
    b = ocl_infer.InferenceSession(models["dynamic"])
    for got in (a.run(None, {"x": x}), b.run(None, {"x": x})):
        for g, e in zip(got, want):
            assert np.array_equal(g, e)
    bias = np.linspace(-1, 1, 3, dtype=np.float32).reshape(1, 3, 1)
    np.testing.assert_allclose(want[0], x * 2 + bias, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(want[1], np.maximum(x, 0))


def test_fp16_profile_and_stats(models):
    w, w2 = models["conv_weights"]
    img = np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = conv_reference(img, w, w2)
    sess = ocl_infer.InferenceSession(models["conv"])
    (out,) = sess.run(None, {"img": img})
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    half = ocl_infer.InferenceSession(models["conv"], precision="fp16")
    (out16,) = half.run(None, {"img": img})
    assert out16.dtype == np.float32  # inputs and outputs keep their types
    np.testing.assert_allclose(out16, want, rtol=2e-2, atol=2e-3)
    profile = sess.profile({"img": img}, iterations=3, warmup=1)
    assert len(profile) >= 2 and profile.total_us > 0
    ops = {op for r in profile for op in r["op_types"]}
    assert {"Conv", "GlobalAveragePool"} <= ops
    parsed = json.loads(profile.to_json())
    assert len(parsed["launches"]) == len(profile) and len(parsed["inference_us"]) == 3
    assert "Conv" in str(profile)
    stats = sess.stats()
    assert stats["kernel_launches"] >= 2 and stats["plan_ms"] >= stats["programs_ms"] >= 0


def test_tune_and_quantize(models, tmp_path):
    cache = str(tmp_path / "tuning.tsv")
    result = ocl_infer.tune(models["conv"], tuning_cache=cache)
    assert result["tuned_problems"] >= 1 and os.path.exists(cache)
    rng = np.random.default_rng(4)
    calibration = [{"img": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(4)]
    out_path = str(tmp_path / "conv.qdq.onnx")
    data, report = ocl_infer.quantize(models["conv"], calibration, out_path, return_report=True)
    assert os.path.getsize(out_path) == len(data) and report["weights_quantized"] == 2
    quantized = ocl_infer.InferenceSession(out_path)
    img = calibration[0]["img"]
    (q,) = quantized.run(None, {"img": img})
    (f,) = ocl_infer.InferenceSession(models["conv"]).run(None, {"img": img})
    # int8 against float32: within a few percent of the output range.
    assert np.abs(q - f).max() <= 0.05 * max(1e-3, np.abs(f).max())
