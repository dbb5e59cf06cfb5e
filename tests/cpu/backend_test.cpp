// The backend layer on its own: descriptors finalize without a GPU, failures come back as a
// Status that names the call, descriptors and handles are move-only owners, versions read right.
#define BOOST_TEST_MODULE backend
#include <boost/test/unit_test.hpp>

#include "backend/descriptor.hpp"
#include "backend/handle.hpp"
#include "backend/matmul.hpp"
#include "backend/operation_graph.hpp"
#include "backend/operation_matmul.hpp"
#include "backend/pointwise.hpp"
#include "backend/status.hpp"
#include "backend/tensor.hpp"
#include "backend/version.hpp"

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

namespace backend = dnngraph::backend;

namespace {

// A finalized FLOAT tensor with 16-byte alignment.
backend::Tensor finalized_tensor(std::int64_t uid, std::span<const std::int64_t> dims,
                                 std::span<const std::int64_t> strides) {
  auto tensor = backend::Tensor::create();
  BOOST_TEST_REQUIRE(tensor.has_value());
  auto ok = tensor->set_data_type(CUDNN_DATA_FLOAT);
  if (ok) ok = tensor->set_dimensions(dims);
  if (ok) ok = tensor->set_strides(strides);
  if (ok) ok = tensor->set_unique_id(uid);
  if (ok) ok = tensor->set_byte_alignment(16);
  if (ok) ok = tensor->finalize();
  BOOST_TEST_REQUIRE(ok.has_value(), (ok ? "" : ok.error().to_string()));
  return std::move(*tensor);
}

constexpr std::array<std::int64_t, 3> a_dims{1, 8, 4};
constexpr std::array<std::int64_t, 3> a_strides{32, 4, 1};

// A finalized FLOAT tensor [1, 8, 4] with packed strides.
backend::Tensor finalized_tensor(std::int64_t uid) {
  return finalized_tensor(uid, a_dims, a_strides);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

// Descriptors.

BOOST_AUTO_TEST_CASE(tensor_with_dims_strides_uid_type_and_alignment_finalizes) {
  const backend::Tensor tensor = finalized_tensor(1);
  BOOST_TEST(tensor.native() != nullptr);
  BOOST_TEST(tensor.is_finalized());
  BOOST_TEST(tensor.type() == CUDNN_BACKEND_TENSOR_DESCRIPTOR);
}

BOOST_AUTO_TEST_CASE(created_descriptor_is_not_finalized) {
  auto tensor = backend::Tensor::create();
  BOOST_TEST_REQUIRE(tensor.has_value());
  BOOST_TEST(tensor->native() != nullptr);
  BOOST_TEST(!tensor->is_finalized());
}

BOOST_AUTO_TEST_CASE(tensor_without_dims_fails_to_finalize_with_a_status_naming_tensor) {
  auto tensor = backend::Tensor::create();
  BOOST_TEST_REQUIRE(tensor.has_value());
  BOOST_TEST_REQUIRE(tensor->set_data_type(CUDNN_DATA_FLOAT).has_value());
  BOOST_TEST_REQUIRE(tensor->set_unique_id(1).has_value());
  BOOST_TEST_REQUIRE(tensor->set_byte_alignment(16).has_value());
  auto finalized = tensor->finalize();
  BOOST_TEST_REQUIRE(!finalized.has_value());
  const backend::Status& status = finalized.error();
  BOOST_TEST(status.code != CUDNN_STATUS_SUCCESS);
  BOOST_TEST(!status.ok());
  BOOST_TEST(contains(status.context, "Tensor"), status.context);
  BOOST_TEST(!status.to_string().empty());
  BOOST_TEST(contains(status.to_string(), status.context), status.to_string());
  BOOST_TEST(!tensor->is_finalized());
}

BOOST_AUTO_TEST_CASE(attribute_cudnn_refuses_is_an_error_naming_the_attribute_and_descriptor) {
  backend::Tensor tensor = finalized_tensor(1);
  // A finalized descriptor takes no more attributes.
  constexpr std::array<std::int64_t, 3> dims{1, 8, 4};
  auto set = tensor.set_dimensions(dims);
  BOOST_TEST_REQUIRE(!set.has_value());
  BOOST_TEST(set.error().code != CUDNN_STATUS_SUCCESS);
  BOOST_TEST(contains(set.error().context, "CUDNN_ATTR_TENSOR_DIMENSIONS"), set.error().context);
  BOOST_TEST(contains(set.error().context, "Tensor"), set.error().context);
}

// Typed access: what the compiler refuses.

template <class D>
concept raw_attribute_access_is_public = requires(D d, std::span<const double> values) {
  d.set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_DIMENSIONS), values);
} || requires(const D d) {
  d.template get_one<std::int64_t>(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_DIMENSIONS));
};

BOOST_AUTO_TEST_CASE(raw_attribute_set_and_get_are_not_public) {
  static_assert(!raw_attribute_access_is_public<backend::Tensor>);
  static_assert(!raw_attribute_access_is_public<backend::OperationMatmul>);
  static_assert(!raw_attribute_access_is_public<backend::Descriptor>);
  BOOST_TEST(true);  // the static_asserts are the test
}

template <class Ops>
concept an_operation_graph_takes = requires(backend::OperationGraph g, Ops ops) { g.set_ops(ops); };

BOOST_AUTO_TEST_CASE(a_descriptor_valued_setter_takes_only_its_descriptor_class) {
  using backend::Matmul;
  using backend::OperationMatmul;
  using backend::Tensor;
  static_assert(
      std::is_invocable_v<decltype(&OperationMatmul::set_a), OperationMatmul&, const Tensor&>);
  static_assert(
      !std::is_invocable_v<decltype(&OperationMatmul::set_a), OperationMatmul&, const Matmul&>);
  static_assert(!std::is_invocable_v<decltype(&OperationMatmul::set_matmul), OperationMatmul&,
                                     const Tensor&>);
  // An operation graph is made of operations, not of any descriptor.
  static_assert(an_operation_graph_takes<std::span<const backend::Operation* const>>);
  static_assert(!an_operation_graph_takes<std::span<const backend::Tensor* const>>);
  // A typed descriptor comes from its own create(): no descriptor of another type becomes one.
  static_assert(!std::is_constructible_v<Tensor, backend::Descriptor&&>);
  static_assert(!std::is_constructible_v<Tensor, Matmul&&>);
  BOOST_TEST(true);  // the static_asserts are the test
}

BOOST_AUTO_TEST_CASE(matmul_and_pointwise_descriptors_finalize) {
  auto matmul = backend::Matmul::create();
  BOOST_TEST_REQUIRE(matmul.has_value());
  BOOST_TEST_REQUIRE(matmul->set_compute_type(CUDNN_DATA_FLOAT).has_value());
  BOOST_TEST(matmul->finalize().has_value());
  BOOST_TEST(matmul->is_finalized());

  auto pointwise = backend::Pointwise::create();
  BOOST_TEST_REQUIRE(pointwise.has_value());
  BOOST_TEST_REQUIRE(pointwise->set_mode(CUDNN_POINTWISE_RELU_FWD).has_value());
  BOOST_TEST_REQUIRE(pointwise->set_math_precision(CUDNN_DATA_FLOAT).has_value());
  BOOST_TEST(pointwise->finalize().has_value());
  BOOST_TEST(pointwise->is_finalized());
}

BOOST_AUTO_TEST_CASE(matmul_operation_of_finalized_tensors_finalizes) {
  constexpr std::array<std::int64_t, 3> b_dims{1, 4, 2};
  constexpr std::array<std::int64_t, 3> b_strides{8, 2, 1};
  constexpr std::array<std::int64_t, 3> c_dims{1, 8, 2};
  constexpr std::array<std::int64_t, 3> c_strides{16, 2, 1};
  const backend::Tensor a = finalized_tensor(1, a_dims, a_strides);
  const backend::Tensor b = finalized_tensor(2, b_dims, b_strides);
  const backend::Tensor c = finalized_tensor(3, c_dims, c_strides);
  auto desc = backend::Matmul::create();
  auto op = backend::OperationMatmul::create();
  BOOST_TEST_REQUIRE(desc.has_value());
  BOOST_TEST_REQUIRE(op.has_value());
  auto ok = desc->set_compute_type(CUDNN_DATA_FLOAT);
  if (ok) ok = desc->finalize();
  if (ok) ok = op->set_a(a);
  if (ok) ok = op->set_b(b);
  if (ok) ok = op->set_c(c);
  if (ok) ok = op->set_matmul(*desc);
  if (ok) ok = op->finalize();
  BOOST_TEST(ok.has_value(), (ok ? "" : ok.error().to_string()));
  BOOST_TEST(op->is_finalized());
}

BOOST_AUTO_TEST_CASE(descriptor_types_have_readable_names) {
  BOOST_TEST(backend::descriptor_type_name(CUDNN_BACKEND_TENSOR_DESCRIPTOR) == "Tensor");
  BOOST_TEST(backend::descriptor_type_name(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) ==
             "OperationGraph");
  BOOST_TEST(backend::descriptor_type_name(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) ==
             "ExecutionPlan");
}

// Ownership.

BOOST_AUTO_TEST_CASE(move_construction_leaves_the_source_empty) {
  backend::Tensor source = finalized_tensor(1);
  const cudnnBackendDescriptor_t raw = source.native();
  const backend::Tensor target(std::move(source));
  BOOST_TEST(target.native() == raw);
  BOOST_TEST(target.is_finalized());
  BOOST_TEST(source.native() == nullptr);  // NOLINT(bugprone-use-after-move): what is tested
  BOOST_TEST(!source.is_finalized());      // NOLINT(bugprone-use-after-move)
}

BOOST_AUTO_TEST_CASE(move_assignment_takes_the_source_descriptor_and_destroys_its_own) {
  // The descriptor `target` held before is destroyed; the asan preset reports it if it leaks.
  backend::Tensor target = finalized_tensor(1);
  backend::Tensor source = finalized_tensor(2);
  const cudnnBackendDescriptor_t old_raw = target.native();
  const cudnnBackendDescriptor_t source_raw = source.native();
  BOOST_TEST_REQUIRE(old_raw != source_raw);
  target = std::move(source);
  BOOST_TEST(target.native() == source_raw);
  BOOST_TEST(target.is_finalized());
  BOOST_TEST(source.native() == nullptr);  // NOLINT(bugprone-use-after-move): what is tested
}

BOOST_AUTO_TEST_CASE(move_assignment_into_a_moved_from_descriptor_works) {
  backend::Tensor first = finalized_tensor(1);
  backend::Tensor second = finalized_tensor(2);
  const cudnnBackendDescriptor_t second_raw = second.native();
  backend::Tensor keeper(std::move(first));
  first = std::move(second);  // NOLINT(bugprone-use-after-move): reusing a moved-from object
  BOOST_TEST(first.native() == second_raw);
  BOOST_TEST(keeper.native() != nullptr);
}

BOOST_AUTO_TEST_CASE(live_count_follows_creation_moves_and_destruction) {
  const std::int64_t tensors = backend::live_count(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::int64_t all = backend::live_count_all();
  {
    backend::Tensor first = finalized_tensor(1);
    auto matmul = backend::Matmul::create();
    BOOST_TEST_REQUIRE(matmul.has_value());
    BOOST_TEST(backend::live_count(CUDNN_BACKEND_TENSOR_DESCRIPTOR) == tensors + 1);
    BOOST_TEST(backend::live_count(CUDNN_BACKEND_MATMUL_DESCRIPTOR) >= 1);
    BOOST_TEST(backend::live_count_all() == all + 2);
    backend::Tensor moved(std::move(first));  // a move creates nothing
    BOOST_TEST(backend::live_count(CUDNN_BACKEND_TENSOR_DESCRIPTOR) == tensors + 1);
    backend::Tensor second = finalized_tensor(2);
    moved = std::move(second);  // destroys the descriptor `moved` held
    BOOST_TEST(backend::live_count(CUDNN_BACKEND_TENSOR_DESCRIPTOR) == tensors + 1);
  }
  BOOST_TEST(backend::live_count(CUDNN_BACKEND_TENSOR_DESCRIPTOR) == tensors);
  BOOST_TEST(backend::live_count_all() == all);
}

// Status.

BOOST_AUTO_TEST_CASE(status_text_has_context_status_name_code_and_last_error) {
  const backend::Status status{CUDNN_STATUS_BAD_PARAM, "set X on Tensor", "dims missing"};
  const std::string expected = "set X on Tensor: CUDNN_STATUS_BAD_PARAM (" +
                               std::to_string(static_cast<int>(CUDNN_STATUS_BAD_PARAM)) +
                               "): dims missing";
  BOOST_TEST(status.to_string() == expected);
}

BOOST_AUTO_TEST_CASE(check_of_success_is_a_value_and_of_failure_an_error) {
  BOOST_TEST(backend::check(CUDNN_STATUS_SUCCESS, "ok").has_value());
  auto failed = backend::check(CUDNN_STATUS_NOT_SUPPORTED, "cudnnSomething");
  BOOST_TEST_REQUIRE(!failed.has_value());
  BOOST_TEST(failed.error().code == CUDNN_STATUS_NOT_SUPPORTED);
  BOOST_TEST(failed.error().context == "cudnnSomething");
}

// Versions.

BOOST_AUTO_TEST_CASE(version_string_is_major_minor_patch) {
  BOOST_TEST(backend::version_string(91900) == "9.19.0");
  BOOST_TEST(backend::version_string(90102) == "9.1.2");
  BOOST_TEST(backend::version_string(100000) == "10.0.0");
}

BOOST_AUTO_TEST_CASE(runtime_version_is_cudnn_9_or_newer) {
  BOOST_TEST(backend::runtime_version() >= 90000);
}

BOOST_AUTO_TEST_CASE(compiled_version_is_cudnn_9_or_newer) {
  BOOST_TEST(backend::compiled_version >= 90000);
}

// Handle.

BOOST_AUTO_TEST_CASE(default_handle_is_empty) {
  const backend::Handle handle;
  BOOST_TEST(handle.native() == nullptr);
}

BOOST_AUTO_TEST_CASE(handle_creation_fails_without_a_device_and_succeeds_with_one) {
  int devices = 0;
  const bool have_device = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  auto handle = backend::Handle::create();
  if (have_device) {
    BOOST_TEST_REQUIRE(handle.has_value(), (handle ? "" : handle.error().to_string()));
    BOOST_TEST(handle->native() != nullptr);
    backend::Handle moved(std::move(*handle));
    BOOST_TEST(moved.native() != nullptr);
    BOOST_TEST(handle->native() == nullptr);  // NOLINT(bugprone-use-after-move): what is tested
  } else {
    BOOST_TEST_REQUIRE(!handle.has_value());
    BOOST_TEST(handle.error().code != CUDNN_STATUS_SUCCESS);
    BOOST_TEST(handle.error().context == "cudnnCreate");
    BOOST_TEST(!handle.error().to_string().empty());
  }
}

BOOST_AUTO_TEST_CASE(a_cpp_exception_out_of_a_cudnn_call_becomes_a_status) {
  auto r = dnngraph::backend::call("cudnnBackendExecute",
                                   []() -> cudnnStatus_t { throw std::bad_alloc(); });
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().code == CUDNN_STATUS_INTERNAL_ERROR);
  BOOST_TEST(r.error().context == "cudnnBackendExecute");
  BOOST_TEST(r.error().last_error.find("C++ exception out of cuDNN") != std::string::npos);
  BOOST_TEST(r.error().last_error.find("bad_alloc") != std::string::npos);
  auto fine = dnngraph::backend::call("cudnnSetStream", [] { return CUDNN_STATUS_SUCCESS; });
  BOOST_TEST(fine.has_value());
}
