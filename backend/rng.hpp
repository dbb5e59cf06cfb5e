// backend::Rng: CUDNN_BACKEND_RNG_DESCRIPTOR (the distribution a random-number operation draws
// from and its parameters).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class Rng final : public Descriptor {
 public:
  [[nodiscard]] static Expected<Rng> create() {
    return create_as<Rng>(CUDNN_BACKEND_RNG_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_distribution(cudnnRngDistribution_t distribution) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RNG_DISTRIBUTION), distribution);
  }
  // The probability of drawing 1 (else 0).
  [[nodiscard]] Expected<void> set_bernoulli_probability(double probability) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY), probability);
  }
  // The normal distribution's parameters (cuDNN 9.19 refuses a finalize without a deviation).
  [[nodiscard]] Expected<void> set_normal_parameters(double mean, double standard_deviation) {
    auto ok = set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RNG_NORMAL_DIST_MEAN), mean);
    if (ok) {
      ok = set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RNG_NORMAL_DIST_STANDARD_DEVIATION),
               standard_deviation);
    }
    return ok;
  }

 private:
  friend class Descriptor;  // create_as
  explicit Rng(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
};

}  // namespace dnngraph::backend
