// Consumer of the installed package: imports the module (CONSUMER_IMPORT) or includes the public
// headers, then builds and lowers a graph.
#ifdef CONSUMER_IMPORT
import dnngraph;
#else
#include <dnngraph/dnngraph.hpp>
#endif

#include <cstdio>

#ifdef CONSUMER_IMPORT
constexpr const char* way_in = "imported dnngraph";
#else
constexpr const char* way_in = "included <dnngraph/dnngraph.hpp>";
#endif

int main() {
  dnngraph::Graph g;
  g.set_io_data_type(dnngraph::DataType::Half);
  auto a = g.tensor(dnngraph::TensorAttributes().set_name("A").set_uid(1).set_dim({2, 64, 32}));
  auto b = g.tensor(dnngraph::TensorAttributes().set_name("B").set_uid(2).set_dim({2, 32, 16}));
  auto c = g.matmul(a, b);
  c->set_output(true).set_uid(3);
  auto lowered = g.lower();
  if (!lowered || !lowered->all_finalized || lowered->operation_count != 1) {
    std::printf("consumer: lower failed: %s\n",
                lowered ? "not all descriptors finalized" : lowered.error().message.c_str());
    return 1;
  }
  std::printf("consumer: %s, lowered %zu tensors and %zu operation(s)\n", way_in,
              lowered->tensor_count, lowered->operation_count);
  return 0;
}
