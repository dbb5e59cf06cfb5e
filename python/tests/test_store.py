"""KernelCacheStore and the log level from Python (no GPU needed)."""

import dnngraph


def test_a_missing_file_gives_a_new_cache(tmp_path):
    store = dnngraph.KernelCacheStore(tmp_path / "store")
    stored = store.load_or_create("mlp_fp16", "sm_90")
    assert not stored.loaded
    assert stored.warning == ""
    assert not stored.cache.is_built()
    assert stored.path.name.startswith("mlp_fp16--cudnn-")
    assert store.save_if_changed(stored.cache) is False  # no build used it


def test_a_damaged_file_is_set_aside_with_a_warning(tmp_path):
    store = dnngraph.KernelCacheStore(tmp_path)
    path = store.load_or_create("t", "sm_90").path
    path.write_text('{"cudnnVersion":')
    stored = store.load_or_create("t", "sm_90")
    assert not stored.loaded
    assert "damaged" in stored.warning
    assert path.with_name(path.name + ".damaged").exists()


def test_a_key_that_cannot_name_a_file_raises(tmp_path):
    store = dnngraph.KernelCacheStore(tmp_path)
    try:
        store.load_or_create("a/b", "sm_90")
    except dnngraph.Error as e:
        assert e.code == dnngraph.ErrorCode.InvalidAttribute
    else:
        raise AssertionError("expected dnngraph.Error")


def test_the_log_level_can_be_set():
    before = dnngraph.log_level()
    dnngraph.set_log_level(dnngraph.LogLevel.Debug)
    assert dnngraph.log_level() == dnngraph.LogLevel.Debug
    dnngraph.set_log_level(before)
