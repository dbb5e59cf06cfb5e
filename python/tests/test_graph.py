"""Graph construction, validation errors and lowering, all without a GPU."""

import dnngraph
import pytest
from dnngraph import DataType, ErrorCode, PointwiseMode


def matmul_relu(b=1, m=64, n=16, k=32, **graph_options):
    """The issue's example graph: Y = ReLU(A x B), uids 1, 2, 3."""
    options = dict(io_data_type=DataType.BFloat16, compute_data_type=DataType.Float)
    options.update(graph_options)
    g = dnngraph.Graph(**options)
    a = g.tensor(name="A", uid=1, dim=[b, m, k])
    bm = g.tensor(name="B", uid=2, dim=[b, k, n])
    y = g.pointwise(g.matmul(a, bm), mode=PointwiseMode.ReluFwd)
    y.set_output(True).set_uid(3)
    return g, a, bm, y


def error_of(call):
    with pytest.raises(dnngraph.Error) as caught:
        call()
    return caught.value


def test_tensor_keywords_set_the_attributes():
    g = dnngraph.Graph()
    t = g.tensor(name="X", uid=7, dim=[2, 3], stride=[3, 1], data_type=DataType.Half)
    assert (t.name, t.uid, t.dim, t.stride, t.data_type) == ("X", 7, [2, 3], [3, 1], DataType.Half)
    assert not t.is_virtual and not t.is_pass_by_value
    assert repr(t) == "<dnngraph.TensorAttributes 'X' (uid 7)>"


def test_setters_chain_and_return_the_same_tensor():
    g = dnngraph.Graph()
    t = g.tensor(name="X")
    assert t.set_uid(4).set_dim([1, 2]).set_data_type(DataType.Float) is t
    assert (t.uid, t.dim, t.data_type) == (4, [1, 2], DataType.Float)
    assert t.set_output(False).is_virtual


def test_graph_setters_chain():
    g = dnngraph.Graph()
    assert g.set_io_data_type(DataType.Half).set_compute_data_type(DataType.Float) is g
    assert g.set_dynamic_shape_enabled(True).set_kernel_cache(dnngraph.KernelCache()) is g
    assert g.set_override_shape_enabled(False).set_name("g").set_kernel_cache(None) is g


def test_a_scalar_tensor_is_passed_by_value():
    g = dnngraph.Graph()
    s = g.tensor(value=0.5)
    assert s.is_pass_by_value and s.value == 0.5 and s.data_type is DataType.Float


def test_validate_infers_outputs_and_assigns_uids():
    g, a, b, y = matmul_relu()
    g.validate()
    assert a.stride == [2048, 32, 1]
    assert y.dim == [1, 64, 16]
    assert y.data_type is DataType.BFloat16


def test_lower_reports_the_finalized_descriptors():
    g, *_ = matmul_relu()
    summary = g.lower()
    assert summary.all_finalized
    assert summary.tensor_count == 4
    assert summary.operation_count == 2
    assert summary.operations == ["matmul 'matmul_0'", "pointwise 'pointwise_1'"]


def test_key_names_what_cudnn_is_given_and_topology_key_the_layout():
    g, *_ = matmul_relu()
    key = g.key()
    assert len(key) == 32 and set(key) <= set("0123456789abcdef")
    assert matmul_relu()[0].key() == key
    assert matmul_relu(m=128)[0].key() != key
    assert matmul_relu(io_data_type=DataType.Half)[0].key() != key
    dynamic = [matmul_relu(m=m, n=n)[0] for m, n in ((64, 16), (1024, 512))]
    for d in dynamic:
        d.set_dynamic_shape_enabled(True)
    assert dynamic[0].topology_key() == dynamic[1].topology_key()
    assert dynamic[0].key() != dynamic[1].key()
    assert dynamic[0].topology_key() != g.topology_key()  # static against dynamic


def test_validation_errors_carry_their_code():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    a = g.tensor(name="A", uid=1, dim=[1, 64, 32])
    b = g.tensor(name="B", uid=2, dim=[1, 31, 16])
    g.matmul(a, b).set_output(True).set_uid(3)
    e = error_of(g.validate)
    assert e.code is ErrorCode.ShapeMismatch
    assert "'A'" in e.message and "'B'" in e.message


def test_duplicate_uids_are_refused():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    a = g.tensor(name="A", uid=1, dim=[1, 8, 8])
    b = g.tensor(name="B", uid=1, dim=[1, 8, 8])
    g.matmul(a, b).set_output(True).set_uid(3)
    assert error_of(g.validate).code is ErrorCode.DuplicateUid


def test_a_tensor_of_another_graph_is_foreign():
    g1, g2 = dnngraph.Graph(io_data_type=DataType.Half), dnngraph.Graph(io_data_type=DataType.Half)
    a = g1.tensor(name="A", uid=1, dim=[1, 8, 8])
    b = g2.tensor(name="B", uid=2, dim=[1, 8, 8])
    g2.matmul(a, b).set_output(True)
    assert error_of(g2.validate).code is ErrorCode.ForeignTensor


def test_a_pointwise_mode_needs_its_number_of_inputs():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    x = g.tensor(name="X", uid=1, dim=[1, 8, 8])
    g.pointwise(x, mode=PointwiseMode.Add).set_output(True)
    assert error_of(g.validate).code is ErrorCode.InvalidAttribute


def test_number_operands_become_scalars_by_value():
    g = dnngraph.Graph(io_data_type=DataType.Half, compute_data_type=DataType.Float)
    x = g.tensor(name="X", uid=1, dim=[1, 8, 8])
    y = g.pointwise(x, 0.5, mode=PointwiseMode.Mul)
    y.set_output(True).set_uid(2)
    t = g.tensor(name="T", uid=4, dim=[1, 8, 8], data_type=DataType.Boolean)
    z = g.pointwise(y, 2.0, t, mode=PointwiseMode.BinarySelect)
    z.set_output(True).set_uid(3)
    assert g.lower().operation_count == 2


def test_fp8_matmul_lowers():
    g = dnngraph.Graph(compute_data_type=DataType.Float)
    a = g.tensor(name="A", uid=1, dim=[1, 64, 32], data_type=DataType.Fp8E4M3)
    b = g.tensor(name="B", uid=2, dim=[1, 32, 64], data_type=DataType.Fp8E4M3)
    c = g.matmul(a, b, name="mm")
    c.set_output(True).set_uid(3).set_data_type(DataType.BFloat16)
    assert g.lower().operations == ["matmul 'mm'"]


def half_graph():
    return dnngraph.Graph(io_data_type=DataType.Half, compute_data_type=DataType.Float)


def test_conv_fprop_infers_its_output():
    g = half_graph()
    x = g.tensor(name="X", uid=1, dim=[1, 8, 16, 16],
                 stride=dnngraph.channels_last_strides([1, 8, 16, 16]))
    w = g.tensor(name="W", uid=2, dim=[8, 8, 3, 3],
                 stride=dnngraph.channels_last_strides([8, 8, 3, 3]))
    y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    y.set_output(True).set_uid(3)
    assert g.lower().operations == ["conv_fprop 'conv'"]
    assert y.dim == [1, 8, 16, 16] and y.stride == dnngraph.channels_last_strides(y.dim)


def test_conv_dgrad_and_wgrad_lower():
    dg = half_graph()
    dx = dg.conv_dgrad(dg.tensor(name="dY", uid=1, dim=[1, 8, 16, 16]),
                       dg.tensor(name="W", uid=2, dim=[8, 8, 3, 3]), padding=[1, 1])
    dx.set_output(True).set_uid(3)
    assert dg.lower().operation_count == 1 and dx.dim == [1, 8, 16, 16]
    wg = half_graph()
    dw = wg.conv_wgrad(wg.tensor(name="X", uid=1, dim=[1, 8, 16, 16]),
                       wg.tensor(name="dY", uid=2, dim=[1, 8, 16, 16]), pre_padding=[1, 1],
                       post_padding=[1, 1])
    dw.set_output(True).set_uid(3).set_dim([8, 8, 3, 3])
    assert wg.lower().operation_count == 1


def test_a_depthwise_conv_takes_one_channel_per_group():
    g = half_graph()
    x = g.tensor(name="X", uid=1, dim=[1, 8, 16, 16])
    w = g.tensor(name="W", uid=2, dim=[8, 1, 3, 3])
    y = g.conv_fprop(x, w, padding=[1, 1], group_count=8, name="depthwise")
    y.set_output(True).set_uid(3)
    assert g.lower().operation_count == 1 and y.dim == [1, 8, 16, 16]
    ungrouped = half_graph()
    ungrouped.conv_fprop(ungrouped.tensor(name="X", uid=1, dim=[1, 8, 16, 16]),
                         ungrouped.tensor(name="W", uid=2, dim=[8, 1, 3, 3]),
                         padding=[1, 1]).set_output(True)
    e = error_of(ungrouped.validate)
    assert e.code is ErrorCode.ShapeMismatch and "set_group_count(8)" in e.message


def test_a_convolution_with_wrong_geometry_is_refused():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    x = g.tensor(name="X", uid=1, dim=[1, 8, 16, 16])
    w = g.tensor(name="W", uid=2, dim=[8, 8, 3, 3])
    g.conv_fprop(x, w, padding=[1, 1, 1]).set_output(True)
    assert error_of(g.validate).code is ErrorCode.InvalidAttribute


def test_reduction_lowers_and_needs_its_output_dims():
    g = dnngraph.Graph(io_data_type=DataType.Half, compute_data_type=DataType.Float)
    x = g.tensor(name="X", uid=1, dim=[1, 64, 32])
    y = g.reduction(x, mode=dnngraph.ReductionMode.Add)
    y.set_output(True).set_uid(2).set_dim([1, 64, 1])
    assert g.lower().operations[0].startswith("reduction")


def test_rng_feeds_a_dropout_mask_and_checks_its_key():
    g = half_graph()
    x = g.tensor(name="X", uid=1, dim=[1, 64, 32])
    seed, offset = (g.tensor(name=n, uid=2 + i, dim=[1, 1, 1], data_type=DataType.Int64)
                    for i, n in enumerate(["seed", "offset"]))
    mask = g.rng(seed, offset, bernoulli_probability=0.9, name="mask")
    mask.set_dim([1, 64, 32])
    kept = g.pointwise(x, mask, mode=dnngraph.PointwiseMode.Mul)
    y = g.pointwise(kept, 1.0 / 0.9, mode=dnngraph.PointwiseMode.Mul)
    y.set_output(True).set_uid(4)
    assert g.lower().operations[0] == "rng 'mask'"
    bad = half_graph()
    bseed, boffset = (bad.tensor(name=n, uid=1 + i, dim=[1, 1, 1], data_type=DataType.Float)
                      for i, n in enumerate(["seed", "offset"]))
    bad.rng(bseed, boffset, bernoulli_probability=0.5).set_dim([1, 8, 8]).set_output(True)
    e = error_of(bad.validate)
    assert e.code is ErrorCode.UnsupportedDataType and "it takes Int64 or Int32" in e.message


def test_resample_pools_and_its_backward_reads_the_index():
    g = half_graph()
    nhwc = [7 * 9 * 8, 1, 9 * 8, 8]
    x = g.tensor(name="X", uid=1, dim=[2, 8, 7, 9], stride=nhwc)
    window = dict(mode=dnngraph.ResampleMode.MaxPool, window=[3, 3], stride=[2, 2],
                  padding=[1, 1])
    y, index = g.resample(x, generate_index=True, name="pool", **window)
    y.set_output(True).set_uid(2)
    index.set_output(True).set_uid(3)
    dy = g.tensor(name="dY", uid=4, dim=[2, 8, 4, 5], stride=[4 * 5 * 8, 1, 5 * 8, 8])
    dx = g.resample_backward(dy, index=index, name="pool_bwd", **window)
    dx.set_output(True).set_uid(5).set_dim([2, 8, 7, 9])
    assert g.lower().operations == ["resample 'pool'", "resample_backward 'pool_bwd'"]
    assert y.dim == [2, 8, 4, 5] and index.data_type is DataType.Int8
    assert dx.stride == nhwc

    avg = half_graph()
    ax = avg.tensor(name="X", uid=1, dim=[1, 4, 8, 8])
    ay, no_index = avg.resample(ax, mode=dnngraph.ResampleMode.AvgPoolExcludePadding,
                                window=[2, 2], stride=[2, 2])
    assert no_index is None
    ay.set_output(True)
    assert avg.lower().all_finalized and ay.dim == [1, 4, 4, 4]

    bad = half_graph()
    bdy = bad.tensor(name="dY", uid=1, dim=[1, 4, 4, 4])
    bad.resample_backward(bdy, mode=dnngraph.ResampleMode.MaxPool, window=[2, 2],
                          stride=[2, 2]).set_output(True).set_dim([1, 4, 8, 8])
    e = error_of(bad.validate)
    assert e.code is ErrorCode.InvalidAttribute and "needs the forward's Index" in e.message


def test_reshape_transposes_by_permutation_and_lowers():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    x = g.tensor(name="X", uid=1, dim=[2, 3, 4])
    y = g.reshape(x, permutation=[0, 2, 1], name="t")
    y.set_output(True).set_uid(2)
    assert g.lower().operations == ["reshape 't'"]
    assert y.dim == [2, 4, 3] and y.stride == [12, 1, 4]


def test_reshape_needs_the_element_count_of_x():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    x = g.tensor(name="X", uid=1, dim=[2, 3, 4])
    g.reshape(x, name="rs").set_output(True).set_uid(2).set_dim([5, 4])
    with pytest.raises(dnngraph.Error) as caught:
        g.validate()
    assert caught.value.code == dnngraph.ErrorCode.ShapeMismatch
    assert "24 elements" in caught.value.message


def test_concatenate_adds_up_the_axis_and_names_a_mismatch():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    a = g.tensor(name="A", uid=1, dim=[2, 3, 4])
    b = g.tensor(name="B", uid=2, dim=[2, 5, 4])
    y = g.concatenate([a, b], axis=1, name="cat")
    y.set_output(True).set_uid(3)
    g.validate()
    assert y.dim == [2, 8, 4] and y.stride == [32, 4, 1] and y.data_type is DataType.Half

    bad = dnngraph.Graph(io_data_type=DataType.Half)
    a = bad.tensor(name="A", uid=1, dim=[2, 3, 4])
    b = bad.tensor(name="B", uid=2, dim=[2, 5, 4])
    bad.concatenate([a, b], axis=2, name="cat").set_output(True)
    error = error_of(bad.validate)
    assert error.code == ErrorCode.ShapeMismatch
    assert "dim 1 is 5, but input 0 'A' (uid 1) has 3 there" in error.message


def test_concatenate_lowers_from_cudnn_9_7_and_is_refused_below():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    a = g.tensor(name="A", uid=1, dim=[2, 3, 4])
    b = g.tensor(name="B", uid=2, dim=[2, 5, 4])
    g.concatenate([a, b], axis=1, name="cat").set_output(True).set_uid(3)
    if dnngraph.cudnn_offers(dnngraph.CudnnCapability.ConcatOperation):
        assert g.lower().backend_operations == ["OperationConcat"]
    else:
        error = error_of(g.lower)
        assert error.code == ErrorCode.VersionTooOld
        assert "needs cuDNN >= 9.7.0" in error.message


def test_slice_gives_the_window_and_names_a_limit_out_of_range():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    x = g.tensor(name="X", uid=1, dim=[4, 6, 8])
    y = g.slice(x, slices=[(1, 3), (0, 6), (1, 8)], strides=[1, 2, 2], name="s")
    y.set_output(True).set_uid(2)
    g.validate()
    assert y.dim == [2, 3, 4] and y.data_type is DataType.Half

    bad = dnngraph.Graph(io_data_type=DataType.Half)
    x = bad.tensor(name="X", uid=1, dim=[4, 6, 8])
    bad.slice(x, slices=[(0, 4), (0, 7), (0, 8)], name="s").set_output(True)
    error = error_of(bad.validate)
    assert error.code == ErrorCode.InvalidAttribute
    assert "slice {0, 7} ends beyond X's extent 6" in error.message


def test_slice_lowers_from_cudnn_9_22_and_is_refused_below():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    x = g.tensor(name="X", uid=1, dim=[4, 6, 8])
    g.slice(x, slices=[(1, 3), (0, 6), (0, 8)], name="s").set_output(True).set_uid(2)
    if dnngraph.cudnn_offers(dnngraph.CudnnCapability.SliceOperation):
        assert g.lower().backend_operations == ["OperationSlice"]
    else:
        error = error_of(g.lower)
        assert error.code == ErrorCode.VersionTooOld
        assert "needs cuDNN >= 9.22.0" in error.message


def test_norms_return_their_statistics_by_phase():
    g = dnngraph.Graph(io_data_type=DataType.Half, compute_data_type=DataType.Float)
    x = g.tensor(name="X", uid=1, dim=[4, 32, 1, 1], stride=[32, 1, 32, 32])
    scale = g.tensor(name="scale", uid=2, dim=[1, 32, 1, 1], stride=[32, 1, 32, 32],
                     data_type=DataType.Float)
    bias = g.tensor(name="bias", uid=3, dim=[1, 32, 1, 1], stride=[32, 1, 32, 32],
                    data_type=DataType.Float)
    y, mean, inv = g.layernorm(x, scale, bias, phase=dnngraph.NormFwdPhase.Training,
                               epsilon=1e-5)
    assert mean is not None and inv is not None
    y.set_output(True).set_uid(4)
    mean.set_output(True).set_uid(5)
    inv.set_output(True).set_uid(6)
    g.validate()
    assert mean.dim == [4, 1, 1, 1] and mean.data_type is DataType.Float

    r = dnngraph.Graph(io_data_type=DataType.Half, compute_data_type=DataType.Float)
    xr = r.tensor(name="X", uid=1, dim=[4, 32, 1, 1], stride=[32, 1, 32, 32])
    sr = r.tensor(name="scale", uid=2, dim=[1, 32, 1, 1], stride=[32, 1, 32, 32],
                  data_type=DataType.Float)
    yr, inv_r = r.rmsnorm(xr, sr, phase=dnngraph.NormFwdPhase.Inference, epsilon=r.tensor(value=1e-5))
    assert inv_r is None
    yr.set_output(True).set_uid(3)
    assert r.lower().operation_count == 1


def test_batchnorm_inference_is_four_pointwise_nodes():
    g = dnngraph.Graph(io_data_type=DataType.Half, compute_data_type=DataType.Float)
    x = g.tensor(name="X", uid=1, dim=[2, 8, 4, 4])
    params = [g.tensor(name=n, uid=10 + i, dim=[1, 8, 1, 1], data_type=DataType.Float)
              for i, n in enumerate(["mean", "inv_variance", "scale", "bias"])]
    y = g.batchnorm_inference(x, *params, name="bn")
    y.set_output(True).set_uid(2)
    ops = g.lower().operations
    assert len(ops) == 4 and all(op.startswith("pointwise 'bn::") for op in ops)


def test_build_with_an_empty_handle_is_an_error():
    g, *_ = matmul_relu()
    e = error_of(lambda: g.build(dnngraph.Handle.empty(), [dnngraph.HeuristicMode.A]))
    assert e.code is ErrorCode.InvalidHandle
    assert not g.is_built()


def test_a_kernel_cache_needs_a_dynamic_graph():
    kc = dnngraph.KernelCache()
    g, *_ = matmul_relu(kernel_cache=kc)
    e = error_of(lambda: g.build(dnngraph.Handle.empty(), [dnngraph.HeuristicMode.A]))
    assert e.code is ErrorCode.InvalidAttribute
    assert "set_dynamic_shape_enabled(true)" in e.message
    assert not kc.is_built() and kc.descriptors_created() == 0


def test_queries_before_build_raise_not_built():
    g, *_ = matmul_relu()
    assert error_of(g.plan_info).code is ErrorCode.NotBuilt
    assert error_of(g.get_workspace_size).code is ErrorCode.NotBuilt


def test_wrong_argument_types_raise_type_error_before_reaching_cpp():
    g = dnngraph.Graph()
    with pytest.raises(TypeError):
        g.tensor(name="A", dim="not a list of ints")
    with pytest.raises(TypeError):
        g.matmul(None, None)


def attention(b=2, h_q=8, h_k=8, s_q=17, s_kv=33, d=64, **sdpa_options):
    """A BFloat16 attention graph: Q, K, V uids 1-3 (packed BHSD); O uid 4, Stats uid 5."""
    g = dnngraph.Graph(io_data_type=DataType.BFloat16)
    q = g.tensor(name="Q", uid=1, dim=[b, h_q, s_q, d])
    k = g.tensor(name="K", uid=2, dim=[b, h_k, s_kv, d])
    v = g.tensor(name="V", uid=3, dim=[b, h_k, s_kv, d])
    o, stats = g.sdpa(q, k, v, name="attn", **sdpa_options)
    o.set_output(True).set_uid(4)
    if stats is not None:
        stats.set_output(True).set_uid(5)
    return g, o, stats


def test_sdpa_infers_o_and_stats_and_lowers():
    g, o, stats = attention(h_k=2, attn_scale=0.125, causal_mask=True, generate_stats=True)
    summary = g.lower()
    assert summary.all_finalized
    # Q K^T, scale, row and column index, compare, select, max, minus, exp, sum, log, stats,
    # divide, P V.
    assert summary.operation_count == 14
    assert (o.dim, o.data_type) == ([2, 8, 17, 64], DataType.BFloat16)
    assert (stats.dim, stats.data_type) == ([2, 8, 17, 1], DataType.Float)


def test_sdpa_without_stats_returns_none():
    g, o, stats = attention()
    g.validate()
    assert stats is None and o.dim == [2, 8, 17, 64]


def test_sdpa_padding_mask_takes_the_length_tensors():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    q = g.tensor(name="Q", uid=1, dim=[3, 4, 33, 64])
    k = g.tensor(name="K", uid=2, dim=[3, 4, 17, 64])
    v = g.tensor(name="V", uid=3, dim=[3, 4, 17, 64])
    seq_q = g.tensor(name="seq_q", uid=6, dim=[3, 1, 1, 1], data_type=DataType.Int32)
    seq_kv = g.tensor(name="seq_kv", uid=7, dim=[3, 1, 1, 1], data_type=DataType.Int32)
    o, _ = g.sdpa(q, k, v, padding_mask=True, seq_len_q=seq_q, seq_len_kv=seq_kv,
                  causal_mask_bottom_right=True, name="attn")
    o.set_output(True).set_uid(4)
    assert g.lower().operation_count == 21
    assert o.dim == [3, 4, 33, 64] and o.data_type is DataType.Half


def test_sdpa_validation_errors_name_the_node_and_values():
    g, _, _ = attention(h_k=3)
    e = error_of(g.validate)
    assert e.code is ErrorCode.ShapeMismatch
    assert "sdpa 'attn': K has 3 heads, which does not divide Q's 8" in e.message

    g, _, _ = attention(d=60)
    e = error_of(g.validate)
    assert e.code is ErrorCode.InvalidAttribute and "head dim of Q and K is 60" in e.message

    g, _, _ = attention(padding_mask=True)
    e = error_of(g.validate)
    assert e.code is ErrorCode.InvalidAttribute and "needs both set_seq_len_q" in e.message

    g, _, _ = attention(causal_mask_bottom_right=True)
    e = error_of(g.validate)
    assert "s_q 17 != s_kv 33 needs a padding mask" in e.message


def test_norm_backward_gives_dx_like_x_and_float_parameter_gradients():
    g = half_graph()
    x = g.tensor(name="X", uid=1, dim=[6, 64, 1, 1])
    dy = g.tensor(name="dY", uid=2, dim=[6, 64, 1, 1])
    scale = g.tensor(name="scale", uid=3, dim=[1, 64, 1, 1], data_type=DataType.Float)
    mean, inv_var = (g.tensor(name=n, uid=4 + i, dim=[6, 1, 1, 1], data_type=DataType.Float)
                     for i, n in enumerate(["mean", "inv_var"]))
    dx, dscale, dbias = g.layernorm_backward(dy, x, scale, mean, inv_var, name="ln_bwd")
    for t in (dx, dscale, dbias):
        t.set_output(True)
    assert g.lower().operations == ["layernorm_backward 'ln_bwd'"]
    assert dx.dim == [6, 64, 1, 1] and dx.data_type is DataType.Half
    assert dscale.dim == [1, 64, 1, 1] and dbias.data_type is DataType.Float
    r = half_graph()
    rx = r.tensor(name="X", uid=1, dim=[6, 64, 1, 1])
    rdx, rdscale = r.rmsnorm_backward(
        r.tensor(name="dY", uid=2, dim=[6, 64, 1, 1]), rx,
        r.tensor(name="scale", uid=3, dim=[1, 64, 1, 1], data_type=DataType.Float),
        r.tensor(name="inv_rms", uid=4, dim=[6, 1, 1, 1], data_type=DataType.Half))
    rdx.set_output(True)
    rdscale.set_output(True)
    e = error_of(r.validate)
    assert e.code is ErrorCode.UnsupportedDataType and "it takes Float" in e.message


def test_batchnorm_training_gives_per_channel_statistics_and_running_updates():
    g = half_graph()
    nhwc = [32 * 5 * 3, 1, 3 * 32, 32]
    x = g.tensor(name="X", uid=1, dim=[4, 32, 5, 3], stride=nhwc)
    scale, bias, rm, rv = (g.tensor(name=n, uid=2 + i, dim=[1, 32, 1, 1],
                                    data_type=DataType.Float)
                           for i, n in enumerate(["scale", "bias", "rm", "rv"]))
    y, mean, inv_var, next_mean, next_var = g.batchnorm(
        x, scale, bias, epsilon=1e-5, prev_running_mean=rm, prev_running_var=rv, momentum=0.1,
        name="bn")
    for t in (y, mean, inv_var, next_mean, next_var):
        t.set_output(True)
    assert g.lower().operations == ["batchnorm 'bn'"]
    assert mean.dim == [1, 32, 1, 1] and next_var.data_type is DataType.Float
    dy = g.tensor(name="dY", uid=6, dim=[4, 32, 5, 3], stride=nhwc)
    dx, dscale, dbias = g.batchnorm_backward(dy, x, scale, mean, inv_var, name="bn_bwd")
    for t in (dx, dscale, dbias):
        t.set_output(True)
    assert g.lower().operations == ["batchnorm 'bn'", "batchnorm_backward 'bn_bwd'"]
    assert dbias.dim == [1, 32, 1, 1]

    plain = half_graph()
    px = plain.tensor(name="X", uid=1, dim=[4, 32, 5, 3], stride=nhwc)
    ps, pb = (plain.tensor(name=n, uid=2 + i, dim=[1, 32, 1, 1], data_type=DataType.Float)
              for i, n in enumerate(["scale", "bias"]))
    outs = plain.batchnorm(px, ps, pb, epsilon=1e-5, momentum=2.0)
    assert outs[3] is not None  # a momentum alone asks for running statistics
    outs[0].set_output(True)
    e = error_of(plain.validate)
    assert e.code is ErrorCode.ForeignTensor and "previous running mean is null" in e.message


def test_genstats_gives_per_channel_sums():
    g = half_graph()
    x = g.tensor(name="X", uid=1, dim=[4, 32, 5, 3], stride=[32 * 5 * 3, 1, 3 * 32, 32])
    total, squares = g.genstats(x, name="stats")
    total.set_output(True)
    squares.set_output(True)
    assert g.lower().operations == ["genstats 'stats'"]
    assert total.dim == [1, 32, 1, 1] and squares.data_type is DataType.Float


def test_bn_finalize_takes_genstats_sums_and_gives_six_channel_tensors():
    g = dnngraph.Graph(compute_data_type=DataType.Float)
    total, squares, scale, bias, rm, rv = (
        g.tensor(name=n, uid=1 + i, dim=[1, 32, 1, 1], data_type=DataType.Float)
        for i, n in enumerate(["sum", "sq_sum", "scale", "bias", "rm", "rv"]))
    outs = g.bn_finalize(total, squares, scale, bias, prev_running_mean=rm, prev_running_var=rv,
                         epsilon=1e-5, momentum=0.1, accumulation_count=64, name="fin")
    for t in outs:
        t.set_output(True)
    assert g.lower().operations == ["bn_finalize 'fin'"]
    assert all(t.dim == [1, 32, 1, 1] for t in outs)


def test_instancenorm_gives_statistics_per_sample_and_channel():
    g = half_graph()
    nhwc = [32 * 5 * 3, 1, 3 * 32, 32]
    x = g.tensor(name="X", uid=1, dim=[4, 32, 5, 3], stride=nhwc)
    scale, bias = (g.tensor(name=n, uid=2 + i, dim=[1, 32, 1, 1], data_type=DataType.Float)
                   for i, n in enumerate(["scale", "bias"]))
    y, mean, inv_var = g.instancenorm(x, scale, bias, phase=dnngraph.NormFwdPhase.Training,
                                      epsilon=1e-5, name="in")
    for t in (y, mean, inv_var):
        t.set_output(True)
    dy = g.tensor(name="dY", uid=6, dim=[4, 32, 5, 3], stride=nhwc)
    dx, dscale, dbias = g.instancenorm_backward(dy, x, scale, mean, inv_var, name="in_bwd")
    for t in (dx, dscale, dbias):
        t.set_output(True)
    assert g.lower().operations == ["instancenorm 'in'", "instancenorm_backward 'in_bwd'"]
    assert mean.dim == [4, 32, 1, 1] and dscale.dim == [1, 32, 1, 1]
    _, none_mean, none_inv = half_graph().instancenorm(
        x, scale, bias, phase=dnngraph.NormFwdPhase.Inference, epsilon=1e-5)
    assert none_mean is None and none_inv is None


def test_dbn_weight_gives_five_channel_tensors_and_names_a_wrong_mean():
    g = half_graph()
    nhwc = [32 * 5 * 3, 1, 3 * 32, 32]
    dy, x = (g.tensor(name=n, uid=1 + i, dim=[4, 32, 5, 3], stride=nhwc)
             for i, n in enumerate(["dY", "X"]))
    mean, inv_var, scale = (g.tensor(name=n, uid=3 + i, dim=[1, 32, 1, 1],
                                     data_type=DataType.Float)
                            for i, n in enumerate(["mean", "inv_var", "scale"]))
    outs = g.dbn_weight(dy, x, mean, inv_var, scale, name="dbn")
    for t in outs:
        t.set_output(True)
    lowered = g.lower()
    assert lowered.operations == ["dbn_weight 'dbn'"]
    assert lowered.backend_operations == ["OperationBnBwdWeights"]
    assert all(t.dim == [1, 32, 1, 1] and t.data_type is DataType.Float for t in outs)
    assert [t.name for t in outs] == ["dbn::dScale", "dbn::dBias", "dbn::eq_scale_dy",
                                      "dbn::eq_scale_x", "dbn::eq_bias"]

    bad = half_graph()
    bx = bad.tensor(name="X", uid=2, dim=[4, 32, 5, 3], stride=nhwc)
    per_sample = bad.tensor(name="mean", uid=3, dim=[4, 32, 1, 1], data_type=DataType.Float)
    channel = [bad.tensor(name=n, uid=4 + i, dim=[1, 32, 1, 1], data_type=DataType.Float)
               for i, n in enumerate(["inv_var", "scale"])]
    bad.dbn_weight(bad.tensor(name="dY", uid=1, dim=[4, 32, 5, 3], stride=nhwc), bx, per_sample,
                   *channel)[0].set_output(True)
    e = error_of(bad.validate)
    assert e.code is ErrorCode.ShapeMismatch
    assert "mean 'mean' (uid 3) has dims [4, 32, 1, 1], expected [1, 32, 1, 1]" in e.message


def test_adalayernorm_takes_per_sample_parameters_and_gives_per_row_statistics():
    if not dnngraph.cudnn_offers(dnngraph.CudnnCapability.AdaptiveLayerNorm):
        pytest.skip("adaptive layer norm needs cuDNN >= 9.9")
    g = half_graph()
    x = g.tensor(name="X", uid=1, dim=[4, 50, 64], stride=[50 * 64, 64, 1])
    scale, bias = (g.tensor(name=n, uid=2 + i, dim=[4, 1, 64], stride=[64, 64, 1],
                            data_type=DataType.Float) for i, n in enumerate(["scale", "bias"]))
    y, mean, inv_var = g.adalayernorm(x, scale, bias, phase=dnngraph.NormFwdPhase.Training,
                                      epsilon=1e-5, name="ada")
    for t in (y, mean, inv_var):
        t.set_output(True)
    dy = g.tensor(name="dY", uid=6, dim=[4, 50, 64], stride=[50 * 64, 64, 1])
    dx, dscale, dbias = g.adalayernorm_backward(dy, x, scale, mean, inv_var, name="ada_bwd")
    for t in (dx, dscale, dbias):
        t.set_output(True)
    assert g.lower().operations == ["adalayernorm 'ada'", "adalayernorm_backward 'ada_bwd'"]
    assert mean.dim == [4, 50, 1] and dscale.dim == [4, 1, 64]
    _, none_mean, none_inv = half_graph().adalayernorm(
        x, scale, bias, phase=dnngraph.NormFwdPhase.Inference, epsilon=1e-5)
    assert none_mean is None and none_inv is None

    shared = half_graph()
    sx = shared.tensor(name="X", uid=1, dim=[4, 50, 64], stride=[50 * 64, 64, 1])
    layer_scale, layer_bias = (shared.tensor(name=n, uid=2 + i, dim=[1, 50, 64],
                                             data_type=DataType.Float)
                               for i, n in enumerate(["scale", "bias"]))
    shared.adalayernorm(sx, layer_scale, layer_bias, phase=dnngraph.NormFwdPhase.Inference,
                        epsilon=1e-5)[0].set_output(True)
    e = error_of(shared.validate)
    assert e.code is ErrorCode.ShapeMismatch and "expected [4, 1, 64]" in e.message


def test_ragged_tensors_lower_and_need_the_padding_mask():
    def graph(padding):
        g = dnngraph.Graph(io_data_type=DataType.Half)
        offsets = g.tensor(name="offsets", uid=8, dim=[3, 1, 1, 1], data_type=DataType.Int32)
        token_major = [16 * 4 * 64, 64, 4 * 64, 1]
        q, k, v = (g.tensor(name=n, uid=i + 1, dim=[2, 4, 16, 64], stride=token_major)
                   .set_ragged_offset(offsets) for i, n in enumerate("QKV"))
        options = {}
        if padding:
            lengths = [g.tensor(name=n, uid=6 + i, dim=[2, 1, 1, 1], data_type=DataType.Int32)
                       for i, n in enumerate(["seq_q", "seq_kv"])]
            options = dict(padding_mask=True, seq_len_q=lengths[0], seq_len_kv=lengths[1])
        o, _ = g.sdpa(q, k, v, name="attn", **options)
        o.set_output(True).set_uid(4)
        assert q.ragged_offset is offsets
        return g

    assert graph(padding=True).lower().all_finalized
    e = error_of(graph(padding=False).validate)
    assert e.code is ErrorCode.InvalidAttribute and "needs the padding mask" in e.message


def fp8_attention(b=2, h_q=4, h_k=4, s=128, d=64, **sdpa_options):
    """An FP8 attention graph: Q, K, V uids 1-3 (Fp8E4M3, packed BHSD), the six factors uids
    11-16 (Float [1, 1, 1, 1]); O 4, Stats 5, Amax_S 6, Amax_O 7."""
    g = dnngraph.Graph(io_data_type=DataType.Fp8E4M3, compute_data_type=DataType.Float)
    q = g.tensor(name="Q", uid=1, dim=[b, h_q, s, d])
    k = g.tensor(name="K", uid=2, dim=[b, h_k, s, d])
    v = g.tensor(name="V", uid=3, dim=[b, h_k, s, d])
    factors = [g.tensor(name=name, uid=11 + i, dim=[1, 1, 1, 1], data_type=DataType.Float)
               for i, name in enumerate(["descale_q", "descale_k", "descale_v", "descale_s",
                                         "scale_s", "scale_o"])]
    o, stats, amax_s, amax_o = g.sdpa_fp8(q, k, v, *factors, name="attn", **sdpa_options)
    o.set_output(True).set_uid(4)
    if stats is not None:
        stats.set_output(True).set_uid(5)
    amax_s.set_output(True).set_uid(6)
    amax_o.set_output(True).set_uid(7)
    return g, o, stats, amax_s, amax_o


def test_sdpa_fp8_lowers_to_the_fp8_pattern_with_two_amax():
    g, o, stats, amax_s, amax_o = fp8_attention(h_k=2, attn_scale=0.125, causal_mask=True,
                                                generate_stats=True)
    summary = g.lower()
    assert summary.all_finalized
    # Q K^T, scale, descale_q, descale_k; row and column index, compare, select; 7 softmax steps;
    # amax of P, scale_s; P V, descale_s, descale_v, scale_o, amax of O.
    assert summary.operation_count == 22
    assert summary.operations == ["sdpa_fp8 'attn'"]
    assert (o.dim, o.data_type) == ([2, 4, 128, 64], DataType.Fp8E4M3)
    assert (stats.dim, stats.data_type) == ([2, 4, 128, 1], DataType.Float)
    for amax in (amax_s, amax_o):
        assert (amax.dim, amax.data_type) == ([1, 1, 1, 1], DataType.Float)


def test_sdpa_fp8_without_stats_returns_none():
    g, _, stats, _, _ = fp8_attention()
    g.validate()
    assert stats is None


def test_sdpa_fp8_refusals_name_the_node_and_values():
    g, _, _, _, _ = fp8_attention(d=72)
    e = error_of(g.validate)
    assert e.code is ErrorCode.InvalidAttribute
    assert "sdpa_fp8 'attn': the head dim of Q and K is 72" in e.message

    g, _, _, _, _ = fp8_attention(causal_mask_bottom_right=True)
    e = error_of(g.validate)
    assert e.code is ErrorCode.InvalidAttribute and "Blackwell" in e.message

    g, o, _, _, _ = fp8_attention()
    o.set_data_type(DataType.BFloat16)
    e = error_of(g.validate)
    assert e.code is ErrorCode.UnsupportedDataType and "writes Fp8E4M3" in e.message


def test_sdpa_fp8_is_a_capability_of_cudnn_9_1():
    assert dnngraph.cudnn_version_needed(dnngraph.CudnnCapability.Fp8Attention) == 90100


FP8_BACKWARD_FACTORS = ["descale_q", "descale_k", "descale_v", "descale_o", "descale_do",
                        "descale_s", "descale_dp", "scale_s", "scale_dq", "scale_dk", "scale_dv",
                        "scale_dp"]


def fp8_attention_backward(b=2, h_q=4, h_k=4, s=128, d=128, d_o_type=DataType.Fp8E4M3,
                           **options):
    """An FP8 attention backward graph: Q, K, V, O, dO uids 1-5 (Fp8E4M3, dO of d_o_type), Stats
    6, the twelve factors uids 11-22 (Float [1, 1, 1, 1]); the seven outputs uids 30-36."""
    g = dnngraph.Graph(io_data_type=DataType.Fp8E4M3, compute_data_type=DataType.Float)
    q = g.tensor(name="Q", uid=1, dim=[b, h_q, s, d])
    k = g.tensor(name="K", uid=2, dim=[b, h_k, s, d])
    v = g.tensor(name="V", uid=3, dim=[b, h_k, s, d])
    o = g.tensor(name="O", uid=4, dim=[b, h_q, s, d])
    d_o = g.tensor(name="dO", uid=5, dim=[b, h_q, s, d], data_type=d_o_type)
    stats = g.tensor(name="Stats", uid=6, dim=[b, h_q, s, 1], data_type=DataType.Float)
    factors = [g.tensor(name=name, uid=11 + i, dim=[1, 1, 1, 1], data_type=DataType.Float)
               for i, name in enumerate(FP8_BACKWARD_FACTORS)]
    outputs = g.sdpa_fp8_backward(q, k, v, o, d_o, stats, *factors, name="attn", **options)
    for i, t in enumerate(outputs):
        t.set_output(True).set_uid(30 + i)
    return g, outputs


def test_sdpa_fp8_backward_lowers_to_three_fp8_matmuls_and_four_amax():
    g, outputs = fp8_attention_backward(h_k=2, attn_scale=0.088, causal_mask=True)
    summary = g.lower()
    assert summary.all_finalized
    # D (4); Q K^T, scale, two descales (4); causal (4); minus Stats, exp, scale_s, P^T (4);
    # dV's matmul with the sum over each group (6); dO V^T, two descales, minus D, times P,
    # scale (6); amax of dS, scale_dP, K from K^T (3); dQ's matmul (5); dS^T (1); dK's (6).
    assert summary.operation_count == 43
    assert summary.operations == ["sdpa_fp8_backward 'attn'"]
    d_q, d_k, d_v = outputs[:3]
    assert (d_q.dim, d_q.data_type) == ([2, 4, 128, 128], DataType.Fp8E4M3)
    assert (d_k.dim, d_v.dim) == ([2, 2, 128, 128], [2, 2, 128, 128])
    for amax in outputs[3:]:
        assert (amax.dim, amax.data_type) == ([1, 1, 1, 1], DataType.Float)


def test_sdpa_fp8_backward_gradients_take_the_e5m2_of_do():
    g, outputs = fp8_attention_backward(d_o_type=DataType.Fp8E5M2)
    g.validate()
    assert [t.data_type for t in outputs[:3]] == [DataType.Fp8E5M2] * 3


def test_sdpa_fp8_backward_refusals_name_the_node_and_values():
    g, _ = fp8_attention_backward(d=64)
    e = error_of(g.validate)
    assert e.code is ErrorCode.InvalidAttribute
    assert "sdpa_fp8_backward 'attn': the head dim of Q and K is 64" in e.message
    assert "take 128 only" in e.message

    g, outputs = fp8_attention_backward()
    outputs[1].set_data_type(DataType.BFloat16)
    e = error_of(g.validate)
    assert e.code is ErrorCode.UnsupportedDataType and "dK 'attn::dK' (uid 31)" in e.message

    g, _ = fp8_attention_backward(d_o_type=DataType.Half)
    e = error_of(g.validate)
    assert e.code is ErrorCode.UnsupportedDataType
    assert "dO in Fp8E4M3 or Fp8E5M2" in e.message


def test_sdpa_fp8_backward_is_a_capability_of_cudnn_9_7():
    assert dnngraph.cudnn_version_needed(dnngraph.CudnnCapability.Fp8AttentionBackward) == 90700


def test_sdpa_in_float_is_refused():
    g = dnngraph.Graph(io_data_type=DataType.Float)
    q, k, v = (g.tensor(name=n, dim=[1, 1, 16, 64]) for n in "QKV")
    o, _ = g.sdpa(q, k, v, name="attn")
    o.set_output(True)
    e = error_of(g.validate)
    assert e.code is ErrorCode.UnsupportedDataType and "Half or BFloat16" in e.message


def test_sdpa_backward_returns_the_gradients_and_d():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    q, k, v, o, d_o = (g.tensor(name=n, uid=i + 1, dim=[2, 4, 33, 64])
                       for i, n in enumerate(["Q", "K", "V", "O", "dO"]))
    stats = g.tensor(name="Stats", uid=6, dim=[2, 4, 33, 1], data_type=DataType.Float)
    dq, dk, dv, d = g.sdpa_backward(q, k, v, o, d_o, stats, attn_scale=0.125, causal_mask=True,
                                    name="bwd")
    for uid, t in enumerate((dq, dk, dv, d), start=10):
        t.set_output(True).set_uid(uid)
    # 15 + scale of S and of dS + the causal mask's four steps (+ the dQ accumulator's copy to
    # dQ from cuDNN 9.6).
    accumulator_copy = 1 if dnngraph.cudnn_offers(dnngraph.CudnnCapability.SdpaBackwardAccumulator) else 0
    assert g.lower().operation_count == 21 + accumulator_copy
    assert dq.dim == [2, 4, 33, 64] and dq.data_type is DataType.Half
    assert (d.dim, d.data_type) == ([2, 4, 33, 1], DataType.Float)


def test_sdpa_dropout_draws_a_mask_before_p_v_and_can_write_it():
    g = dnngraph.Graph(io_data_type=DataType.BFloat16)
    q = g.tensor(name="Q", uid=1, dim=[2, 8, 17, 64])
    k, v = (g.tensor(name=n, uid=2 + i, dim=[2, 8, 33, 64]) for i, n in enumerate("KV"))
    seed, offset = (g.tensor(name=n, uid=8 + i, dim=[1, 1, 1, 1], data_type=DataType.Int64)
                    for i, n in enumerate(["seed", "offset"]))
    o, stats = g.sdpa(q, k, v, generate_stats=True, dropout=0.1, seed=seed, offset=offset,
                      dropout_mask_output=True, name="attn")
    for uid, t in ((4, o), (5, stats)):
        t.set_output(True).set_uid(uid)
    mask = g.dropout_mask(o)
    mask.set_output(True).set_uid(7)
    summary = g.lower()
    # 9 (softmax, Stats, P V) + rng, P * mask, times 1 / (1 - p); the rng right after the softmax.
    assert summary.operation_count == 12
    assert summary.backend_operations[-4:] == ["OperationRng", "OperationPointwise",
                                               "OperationPointwise", "OperationMatmul"]
    assert (mask.dim, mask.data_type) == ([2, 8, 17, 33], DataType.Float)
    assert g.dropout_mask(q) is None


def paged_attention(pages=5, **sdpa_options):
    """A BFloat16 attention over a paged cache: Q [2, 8, 17, 64]; K and V containers of 11
    blocks [2 heads, 8 positions, 64]; page tables [2, 1, pages, 1]; max_seq_len_kv 33."""
    g = dnngraph.Graph(io_data_type=DataType.BFloat16)
    q = g.tensor(name="Q", uid=1, dim=[2, 8, 17, 64])
    k, v = (g.tensor(name=n, uid=2 + i, dim=[11, 2, 8, 64]) for i, n in enumerate("KV"))
    seq_q, seq_kv, table_k, table_v = (
        g.tensor(name=n, uid=6 + i, dim=dim, data_type=DataType.Int32)
        for i, (n, dim) in enumerate([("seq_q", [2, 1, 1, 1]), ("seq_kv", [2, 1, 1, 1]),
                                      ("table_k", [2, 1, pages, 1]),
                                      ("table_v", [2, 1, 5, 1])]))
    options = dict(padding_mask=True, seq_len_q=seq_q, seq_len_kv=seq_kv, page_table_k=table_k,
                   page_table_v=table_v, max_seq_len_kv=33)
    options.update(sdpa_options)
    o, _ = g.sdpa(q, k, v, name="attn", **options)
    o.set_output(True).set_uid(4)
    return g, o


def test_sdpa_reads_k_and_v_from_a_paged_cache():
    g, o = paged_attention()
    summary = g.lower()
    # load K, Q K^T, 6 padding steps, 6 softmax steps, divide, load V, P V.
    assert summary.operation_count == 17
    assert summary.backend_operations[0] == "OperationPagedCacheLoad"
    assert summary.backend_operations[-2:] == ["OperationPagedCacheLoad", "OperationMatmul"]
    assert o.dim == [2, 8, 17, 64]


def test_sdpa_paged_cache_is_checked_before_cudnn():
    g, _ = paged_attention(pages=4)
    e = error_of(g.validate)
    assert e.code is ErrorCode.ShapeMismatch
    assert ("sdpa 'attn': page_table_k 'table_k' (uid 8) has dims [2, 1, 4, 1], expected "
            "[2, 1, 5, 1]") in e.message
    g, _ = paged_attention(padding_mask=False, seq_len_q=None, seq_len_kv=None)
    e = error_of(g.validate)
    assert e.code is ErrorCode.InvalidAttribute and "needs the padding mask" in e.message
    g, _ = paged_attention(max_seq_len_kv=None)
    assert "max_seq_len_kv is 0" in error_of(g.validate).message


def test_sdpa_dropout_is_checked_before_cudnn():
    g, _, _ = attention(dropout=1.0)
    e = error_of(g.validate)
    assert e.code is ErrorCode.InvalidAttribute
    assert "sdpa 'attn': dropout probability 1.000000 is outside [0, 1)" in e.message
    g, _, _ = attention(dropout=0.2)
    e = error_of(g.validate)
    assert "dropout needs a seed and an offset tensor" in e.message
    g, _, _ = attention(dropout=0.0)  # no dropout: lowers as without
    assert g.lower().operation_count == 9


def test_sdpa_backward_dropout_draws_the_mask_again_first():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    q, k, v, o, d_o = (g.tensor(name=n, uid=i + 1, dim=[2, 4, 33, 64])
                       for i, n in enumerate(["Q", "K", "V", "O", "dO"]))
    stats = g.tensor(name="Stats", uid=6, dim=[2, 4, 33, 1], data_type=DataType.Float)
    seed, offset = (g.tensor(name=n, uid=8 + i, dim=[1, 1, 1, 1], data_type=DataType.Int64)
                    for i, n in enumerate(["seed", "offset"]))
    outputs = g.sdpa_backward(q, k, v, o, d_o, stats, attn_scale=0.125, causal_mask=True,
                              dropout=0.2, seed=seed, offset=offset, name="bwd")
    for uid, t in enumerate(outputs, start=10):
        t.set_output(True).set_uid(uid)
    accumulator_copy = 1 if dnngraph.cudnn_offers(dnngraph.CudnnCapability.SdpaBackwardAccumulator) else 0
    summary = g.lower()
    # 21 as without dropout + rng, P * mask, times 1 / (1 - p), dP * mask, dS times 1 / (1 - p).
    assert summary.operation_count == 26 + accumulator_copy
    assert summary.backend_operations[0] == "OperationRng"
    bad = dnngraph.Graph(io_data_type=DataType.Half)
    q, k, v, o, d_o = (bad.tensor(name=n, uid=i + 1, dim=[2, 4, 33, 64])
                       for i, n in enumerate(["Q", "K", "V", "O", "dO"]))
    stats = bad.tensor(name="Stats", uid=6, dim=[2, 4, 33, 1], data_type=DataType.Float)
    seed, offset = (bad.tensor(name=n, uid=8 + i, dim=[1, 1, 1, 1], data_type=DataType.Int64)
                    for i, n in enumerate(["seed", "offset"]))
    for t in bad.sdpa_backward(q, k, v, o, d_o, stats, causal_mask_bottom_right=True,
                               dropout=0.2, seed=seed, offset=offset, name="bwd"):
        t.set_output(True)
    e = error_of(bad.validate)
    assert "sdpa_backward 'bwd': dropout with a bottom-right causal mask" in e.message


def test_sdpa_backward_checks_the_forward_tensors():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    q, k, v, o, d_o = (g.tensor(name=n, uid=i + 1, dim=[2, 4, 33, 64])
                       for i, n in enumerate(["Q", "K", "V", "O", "dO"]))
    stats = g.tensor(name="Stats", uid=6, dim=[2, 4, 33, 1], data_type=DataType.Half)
    for t in g.sdpa_backward(q, k, v, o, d_o, stats, name="bwd"):
        t.set_output(True)
    e = error_of(g.validate)
    assert e.code is ErrorCode.UnsupportedDataType
    assert "sdpa_backward 'bwd': Stats 'Stats' (uid 6) has data type Half" in e.message


def test_sdpa_bias_and_sliding_window_lower_as_their_steps():
    g = dnngraph.Graph(io_data_type=DataType.BFloat16)
    q = g.tensor(name="Q", uid=1, dim=[2, 4, 64, 64])
    k, v = (g.tensor(name=n, uid=2 + i, dim=[2, 4, 128, 64]) for i, n in enumerate("KV"))
    bias = g.tensor(name="bias", uid=8, dim=[1, 4, 64, 128])
    o, _ = g.sdpa(q, k, v, bias=bias, causal_mask=True, sliding_window_length=16, name="attn")
    o.set_output(True).set_uid(4)
    # 9 (softmax, P V) + the bias's ADD + causal 4 + window 5 (indices, column + W, compare,
    # select).
    assert g.lower().operation_count == 19


def test_sdpa_backward_writes_dbias_for_a_bias_of_one_batch():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    q, o, d_o = (g.tensor(name=n, uid=i + 1, dim=[2, 4, 64, 64]) for i, n in enumerate(["Q", "O", "dO"]))
    k, v = (g.tensor(name=n, uid=4 + i, dim=[2, 4, 128, 64]) for i, n in enumerate("KV"))
    stats = g.tensor(name="Stats", uid=6, dim=[2, 4, 64, 1], data_type=DataType.Float)
    bias = g.tensor(name="bias", uid=7, dim=[1, 4, 64, 128])
    outputs = g.sdpa_backward(q, k, v, o, d_o, stats, bias=bias, dbias_output=True, name="bwd")
    for uid, t in enumerate(outputs, start=10):
        t.set_output(True).set_uid(uid)
    dbias = g.dbias(outputs[0])
    dbias.set_output(True).set_uid(14)
    # 15 + the bias's ADD + dBias's reduction; no dQ accumulator with dBias on any cuDNN (cuDNN
    # leaves dBias unwritten beside it).
    assert g.lower().operation_count == 17
    assert (dbias.dim, dbias.data_type) == ([1, 4, 64, 128], DataType.Half)
    assert g.dbias(q) is None


def test_sdpa_bias_and_window_refusals_name_the_node_and_values():
    g = dnngraph.Graph(io_data_type=DataType.BFloat16)
    q = g.tensor(name="Q", uid=1, dim=[2, 4, 64, 64])
    k, v = (g.tensor(name=n, uid=2 + i, dim=[2, 4, 128, 64]) for i, n in enumerate("KV"))
    bias = g.tensor(name="bias", uid=8, dim=[1, 4, 64, 64])
    g.sdpa(q, k, v, bias=bias, name="attn")[0].set_output(True).set_uid(4)
    refusals = [(g, ErrorCode.ShapeMismatch, "bias 'bias' (uid 8) has dims [1, 4, 64, 64]"),
                (attention(sliding_window_length=8)[0], ErrorCode.InvalidAttribute,
                 "no causal mask is set")]
    for graph, code, text in refusals:
        e = error_of(graph.validate)
        assert (e.code, text in e.message, e.message.startswith("sdpa 'attn'")) == (code, True, True)


def test_sdpa_alibi_reads_the_callers_slopes():
    assert dnngraph.alibi_slopes(4) == [0.25, 0.0625, 0.015625, 0.00390625]
    g = dnngraph.Graph(io_data_type=DataType.BFloat16)
    q = g.tensor(name="Q", uid=1, dim=[2, 4, 64, 64])
    k, v = (g.tensor(name=n, uid=2 + i, dim=[2, 4, 128, 64]) for i, n in enumerate("KV"))
    slopes = g.tensor(name="slopes", uid=9, dim=[1, 4, 1, 1], data_type=DataType.Float)
    o, _ = g.sdpa(q, k, v, causal_mask=True, alibi_slopes=slopes, name="attn")
    o.set_output(True).set_uid(4)
    # 9 + ALiBi (indices, column - row, times slope, add) 5 + causal 4.
    assert g.lower().operation_count == 18
