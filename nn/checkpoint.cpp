#include <strata/nn/checkpoint.h>

#include <strata/tensor/serialize.h>

namespace strata::nn {

void save(const Module& module, const std::string& path) {
  save_safetensors(path, module.state_dict(), {{"format", "strata.nn.Module"}});
}

void load(Module& module, const std::string& path, bool strict) {
  module.load_state_dict(load_safetensors(path), strict);
}

}  // namespace strata::nn

namespace strata::optim {

void save(const Optimizer& optimizer, const std::string& path) {
  save_safetensors(path, optimizer.state_dict(), {{"format", "strata.optim.Optimizer"}});
}

void load(Optimizer& optimizer, const std::string& path) { optimizer.load_state_dict(load_safetensors(path)); }

}  // namespace strata::optim
