// The random-number node without a GPU: rng() checks its Bernoulli probability, its seed and
// offset (one Int64 or Int32 value each) and Y's dims with Errors that name the node and the
// tensor; it lowers to a finalized OperationRng, alone and as the mask of a dropout
// (Y = X * mask * 1 / keep).
#define BOOST_TEST_MODULE rng
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using dnngraph::DataType;
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::LoweringSummary;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::RngAttributes;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

// A Half graph with seed (uid 1) and offset (uid 2), Int64 [1, 1, 1].
struct Keyed {
  Graph g;
  TensorPtr seed, offset;

  explicit Keyed(DataType key_type = DataType::Int64, const Dims& key_dims = {1, 1, 1}) {
    g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
    seed = g.tensor(tensor("seed", 1, key_dims).set_data_type(key_type));
    offset = g.tensor(tensor("offset", 2, key_dims).set_data_type(key_type));
  }
  TensorPtr mask(double probability, Dims dims = {1, 64, 32}) {
    auto y = g.rng(seed, offset,
                   RngAttributes().set_name("mask").set_bernoulli_probability(probability));
    y->set_dim(std::move(dims));
    return y;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_mask_alone_lowers_with_packed_strides_in_the_io_type) {
  Keyed k;
  auto y = k.mask(0.75);
  y->set_output(true).set_uid(3);
  const LoweringSummary s = require_lowered(k.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.operations == (std::vector<std::string>{"rng 'mask'"}));
  BOOST_TEST(y->stride() == (Dims{2048, 32, 1}));
  BOOST_TEST((y->data_type() == DataType::Half));
}

BOOST_AUTO_TEST_CASE(a_dropout_is_the_mask_and_two_multiplications) {
  Keyed k(DataType::Int32);
  auto x = k.g.tensor(tensor("X", 3, {1, 64, 32}));
  auto mask = k.mask(0.9);
  auto kept = k.g.pointwise(x, mask, PointwiseAttributes().set_mode(PointwiseMode::Mul));
  auto y = k.g.pointwise(kept, k.g.tensor(1.0F / 0.9F),
                         PointwiseAttributes().set_name("scale").set_mode(PointwiseMode::Mul));
  y->set_output(true).set_uid(4);
  const LoweringSummary s = require_lowered(k.g);
  BOOST_TEST(s.operation_count == 3U);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST((mask->data_type() == DataType::Float));  // virtual: the intermediate type
}

BOOST_AUTO_TEST_CASE(no_probability_is_an_error_naming_the_setter) {
  Keyed k;
  auto y = k.g.rng(k.seed, k.offset, RngAttributes());
  y->set_dim({1, 8, 8}).set_output(true);
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "rng 'rng_0': no distribution; set_bernoulli_probability(p)"));
}

BOOST_AUTO_TEST_CASE(a_probability_above_one_is_refused_with_its_value) {
  Keyed k;
  k.mask(1.5)->set_output(true);
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "Bernoulli probability 1.500000 is outside [0, 1]"));
}

BOOST_AUTO_TEST_CASE(a_float_seed_is_refused) {
  Keyed k(DataType::Float);
  k.mask(0.5)->set_output(true);
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "seed 'seed' (uid 1) has data type Float; it takes Int64 or Int32"));
}

BOOST_AUTO_TEST_CASE(a_seed_of_two_values_is_refused) {
  Keyed k(DataType::Int64, {1, 1, 2});
  k.mask(0.5)->set_output(true);
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "seed 'seed' (uid 1) has dims [1, 1, 2]; it holds one value"));
}

BOOST_AUTO_TEST_CASE(a_mask_without_dims_says_where_to_set_them) {
  Keyed k;
  auto y = k.g.rng(k.seed, k.offset, RngAttributes().set_bernoulli_probability(0.5));
  y->set_output(true);
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "has no dims; set them on the returned tensor"));
}

BOOST_AUTO_TEST_CASE(an_int32_mask_is_refused) {
  Keyed k;
  auto y = k.mask(0.5);
  y->set_output(true).set_data_type(DataType::Int32);
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "has data type Int32; it takes Float, Half or BFloat16"));
}
