"""KernelCache without a GPU: errors before build, from_json checks, several Python threads."""

import threading

import dnngraph
import pytest
from dnngraph import ErrorCode


def error_of(call):
    with pytest.raises(dnngraph.Error) as caught:
        call()
    return caught.value


def test_revision_before_build_is_invalid_state():
    e = error_of(dnngraph.KernelCache().revision)
    assert e.code is ErrorCode.InvalidState
    assert "revision() before the cache is built" in e.message


def test_size_before_build_is_invalid_state():
    assert error_of(dnngraph.KernelCache().size).code is ErrorCode.InvalidState


def test_to_json_before_build_is_invalid_state():
    assert error_of(dnngraph.KernelCache().to_json).code is ErrorCode.InvalidState


def test_introspection_path_is_named():
    assert dnngraph.KernelCache.introspection_path() in ("native", "library")


GARBAGE = [
    ("empty", "", "does not parse"),
    ("not JSON", "kernel cache", "does not parse"),
    ("not an object", "[1, 2, 3]", "expected an object"),
    ("no kernel_cache", '{"not": "a cache"}', "expected only the members"),
    ("oversized", " " * (256 * 2**20 + 1), "larger than the limit"),
]


@pytest.mark.parametrize("name,document,text", GARBAGE, ids=[g[0] for g in GARBAGE])
def test_from_json_rejects_garbage_and_the_cache_stays_usable(cudnn_documents, name,
                                                              document, text):
    kc = dnngraph.KernelCache()
    e = error_of(lambda: kc.from_json(document))
    assert e.code is ErrorCode.InvalidJson
    assert text in e.message
    assert not kc.is_built()
    # The cache is as it was: a good document still loads, once.
    kc.from_json((cudnn_documents / "matmul.json").read_text())
    assert error_of(lambda: kc.from_json("{}")).code is ErrorCode.InvalidState


def test_a_truncated_document_is_refused(cudnn_documents):
    whole = (cudnn_documents / "matmul.json").read_text()
    kc = dnngraph.KernelCache()
    e = error_of(lambda: kc.from_json(whole[: len(whole) // 2]))
    assert e.code is ErrorCode.InvalidJson
    kc.from_json(whole)


def test_loading_does_not_build(cudnn_documents):
    kc = dnngraph.KernelCache()
    kc.from_json((cudnn_documents / "conv_relu.json").read_text())
    assert not kc.is_built()
    assert error_of(kc.revision).code is ErrorCode.InvalidState
    assert kc.descriptors_created() == 1


def test_every_stored_document_loads(cudnn_documents):
    documents = sorted(cudnn_documents.glob("*.json"))
    assert len(documents) >= 5
    for path in documents:
        dnngraph.KernelCache().from_json(path.read_text())


def test_python_threads_load_one_cache_exactly_once(cudnn_documents):
    document = (cudnn_documents / "matmul.json").read_text()
    kc = dnngraph.KernelCache()
    outcomes = []
    start = threading.Barrier(8)

    def load():
        start.wait()
        for _ in range(10):
            try:
                kc.from_json(document)
                outcomes.append("loaded")
            except dnngraph.Error as e:
                outcomes.append(e.code)

    threads = [threading.Thread(target=load) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("loaded") == 1
    assert outcomes.count(ErrorCode.InvalidState) == 79
    assert kc.descriptors_created() == 1
