#pragma once
// Checkpoints as safetensors files: a module's parameters and buffers (its state_dict) and an
// optimizer's state (its state_dict), so training can stop and resume exactly.
//
//   nn::save(net, "net.safetensors");   nn::load(net, "net.safetensors");
//   optim::save(adam, "adam.safetensors");   optim::load(adam, "adam.safetensors");
#include <string>

#include <strata/nn/module.h>
#include <strata/nn/optim.h>

namespace strata::nn {

// Writes module.state_dict() (dotted names, e.g. "0.weight") to `path`.
void save(const Module& module, const std::string& path);
// Reads `path` and copies it into the module (load_state_dict, strict: names and shapes must
// match; ValueError "[load_state_dict] ..." otherwise).
void load(Module& module, const std::string& path, bool strict = true);

template <class Impl>
void save(const ModuleHolder<Impl>& module, const std::string& path) {
  save(*module, path);
}
template <class Impl>
void load(const ModuleHolder<Impl>& module, const std::string& path, bool strict = true) {
  load(*module, path, strict);
}

}  // namespace strata::nn

namespace strata::optim {

// Writes optimizer.state_dict() (per-parameter state and the groups' options) to `path`.
void save(const Optimizer& optimizer, const std::string& path);
// Restores it into an optimizer built over the same parameter groups.
void load(Optimizer& optimizer, const std::string& path);

}  // namespace strata::optim
