#pragma once
// nn::Module: the base of every layer, holding named parameters, buffers and submodules, and
// nn::ModuleHolder, the shared handle users pass around (see Note [Modules are handles]).
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <strata/ops/ops.h>

namespace strata::nn {

// Note [Modules are handles]
// As in LibTorch, a layer is two classes: `LinearImpl`, derived from Module, holds the state,
// and `Linear`, a ModuleHolder<LinearImpl>, is a shared handle to one LinearImpl. Copies of a
// handle share the module and its parameters; `lin->weight` reaches the Impl and the handle
// also forwards Module's methods, so `net.parameters()` and `net.forward(x)` work with `.`.
// A user module derives from Module directly and lives in a std::shared_ptr (or gets a handle
// with STRATA_MODULE(Name) for a `NameImpl`).
//
// Note [Parameter slots]
// Registered tensors live in slots that never move (a deque), and register_parameter and
// register_buffer return a reference to the slot. Module::to() replaces the tensor in each
// slot, so a member declared `Tensor& weight = register_parameter(...)` (as the built-in
// modules do) follows it; a member holding a copy keeps the old tensor. Unlike LibTorch (which
// swaps the data under the same tensor), a converted parameter is a new tensor: build the
// optimizer after to(), as PyTorch's documentation advises anyway.

class Module;

// A named tensor as a module keeps it: defined or not (Linear's bias when bias = false).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  // `name` is the type name used when printing (e.g. "Linear"); "Module" when empty.
  explicit Module(std::string name = "");
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }

  // Parameters in registration order, this module's before its children's; undefined ones
  // skipped, and a tensor registered under several names (tied weights) listed once.
  tensor_list parameters(bool recurse = true) const;
  // Names are dotted paths: "weight", "0.weight", "fc1.bias".
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  tensor_list buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  // This module and all below it, depth first; the root is named "".
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules() const;

  // Sets training mode here and in every submodule (Dropout reads it).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return is_training_; }

  // Moves or converts every parameter and buffer; parameters stay leaves with their
  // requires_grad. to(ScalarType) converts floating tensors only. See Note [Parameter slots].
  void to(Device device);
  void to(DeviceType type) { to(detail::current_device(type)); }  // Note [Bare device types]
  void to(ScalarType dtype);

  // Clears each parameter's gradient: undefined when set_to_none (LibTorch's default), else zero.
  void zero_grad(bool set_to_none = true);

  // Parameters and buffers by dotted name (detached: they share storage with the module's).
  std::map<std::string, Tensor> state_dict() const;
  // Copies values in place (no grad). Throws ValueError "[load_state_dict] ..." naming missing
  // or unexpected keys (strict) and shape mismatches.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

  // One line describing this module, e.g. "Linear(in_features=2, out_features=3, bias=true)".
  virtual void pretty_print(std::ostream& stream) const;

  // Registration. A parameter is made a leaf that requires grad (when requires_grad); an
  // undefined tensor reserves the name (an absent bias). Names must be new, non-empty, no '.'.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor tensor);
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module needs a Module");
    add_child(std::move(name), module);
    return module;
  }
  template <class Holder>
    requires requires(const Holder& h) { typename Holder::ImplType; h.ptr(); }
  Holder register_module(std::string name, Holder holder) {
    add_child(std::move(name), holder.ptr());
    return holder;
  }

 private:
  void add_child(std::string name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* what) const;
  void apply_to_tensors(const std::function<Tensor(const Tensor&)>& convert);
  template <class Fn>
  void visit_named(const std::string& prefix, bool recurse, bool params, const Fn& fn) const;
  std::vector<std::pair<std::string, Tensor>> unique_named(bool recurse, bool params) const;

  std::string name_;
  std::deque<NamedTensor> parameters_;  // See Note [Parameter slots]
  std::deque<NamedTensor> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool is_training_ = true;
};

// Prints the module tree, one module per line, children indented under their names.
std::ostream& operator<<(std::ostream& stream, const Module& module);

template <class Impl>
class ModuleHolder;

namespace detail {
[[noreturn]] void throw_empty_holder(const char* impl_type_name);
}  // namespace detail

// A shared handle to an Impl module; see Note [Modules are handles].
template <class Impl>
class ModuleHolder {
 public:
  using ImplType = Impl;

  // Default-constructs the Impl when it can be (ReLU(), Sequential()).
  ModuleHolder()
    requires std::is_default_constructible_v<Impl>
      : impl_(std::make_shared<Impl>()) {}
  // An empty handle, to be assigned later: `nn::Linear fc{nullptr};`.
  ModuleHolder(std::nullptr_t) {}  // NOLINT: implicit like LibTorch's
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT
  // Builds the Impl from the arguments: nn::Linear(784, 256).
  template <class Head, class... Tail>
    requires(!std::is_same_v<std::decay_t<Head>, std::nullptr_t> &&
             !std::is_convertible_v<std::decay_t<Head>, std::shared_ptr<Impl>> &&
             !(sizeof...(Tail) == 0 && std::is_base_of_v<ModuleHolder, std::decay_t<Head>>) &&
             std::is_constructible_v<Impl, Head, Tail...>)
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Impl>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    if (!impl_) detail::throw_empty_holder(typeid(Impl).name());
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }

  template <class... Args>
  decltype(auto) forward(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }

  tensor_list parameters(bool recurse = true) const { return get()->parameters(recurse); }
  auto named_parameters(bool recurse = true) const { return get()->named_parameters(recurse); }
  tensor_list buffers(bool recurse = true) const { return get()->buffers(recurse); }
  auto named_buffers(bool recurse = true) const { return get()->named_buffers(recurse); }
  auto children() const { return get()->children(); }
  auto named_children() const { return get()->named_children(); }
  auto named_modules() const { return get()->named_modules(); }
  void train(bool on = true) const { get()->train(on); }
  void eval() const { get()->eval(); }
  bool is_training() const { return get()->is_training(); }
  void to(Device device) const { get()->to(device); }
  void to(DeviceType type) const { get()->to(type); }
  void to(ScalarType dtype) const { get()->to(dtype); }
  void zero_grad(bool set_to_none = true) const { get()->zero_grad(set_to_none); }
  std::map<std::string, Tensor> state_dict() const { return get()->state_dict(); }
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true) const {
    get()->load_state_dict(state, strict);
  }

 private:
  std::shared_ptr<Impl> impl_;
};

template <class Impl>
std::ostream& operator<<(std::ostream& stream, const ModuleHolder<Impl>& holder) {
  return stream << *holder;
}

}  // namespace strata::nn

// Declares `Name`, a handle to `NameImpl` (LibTorch's TORCH_MODULE).
#define STRATA_MODULE(Name)                                      \
  class Name : public ::strata::nn::ModuleHolder<Name##Impl> {   \
   public:                                                       \
    using ::strata::nn::ModuleHolder<Name##Impl>::ModuleHolder;  \
  }
