#include <strata/autograd/keepalive.h>

namespace strata::autograd::detail {

namespace {
struct NodeDeleter {
  std::shared_ptr<void> keepalive;
  void operator()(Node* node) {
    delete node;        // runs the node's code, which may live in the library
    keepalive.reset();  // then, from here, may close it
  }
};
}  // namespace

std::shared_ptr<Node> adopt_node_keeping(Node* node, std::shared_ptr<void> keepalive) {
  return std::shared_ptr<Node>(node, NodeDeleter{std::move(keepalive)});
}

}  // namespace strata::autograd::detail
