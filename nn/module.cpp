// nn::Module: registration, traversal, mode, device/dtype moves, state dicts and printing.
#include <strata/autograd/grad_mode.h>
#include <strata/nn/module.h>

#include <cxxabi.h>

#include <cstdlib>
#include <set>
#include <sstream>
#include <unordered_set>

namespace strata::nn {
namespace {

// A type's readable name, without namespaces or a trailing "Impl" ("Linear" for LinearImpl).
std::string short_type_name(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  if (const size_t colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  if (name.size() > 4 && name.ends_with("Impl")) name.resize(name.size() - 4);
  return name;
}

std::string type_name_of(const Module& module) { return short_type_name(typeid(module).name()); }

std::string join(const std::vector<std::string>& names) {
  std::string result;
  for (const std::string& name : names) result += (result.empty() ? "" : ", ") + name;
  return result;
}

std::string dotted(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace

namespace detail {
void throw_empty_holder(const char* impl_type_name) {
  strata::detail::throw_error<Error>("[ModuleHolder] accessing an empty ", short_type_name(impl_type_name),
                                     " handle: construct it or assign a module to it first");
}
}  // namespace detail

Module::Module(std::string name) : name_(std::move(name)) {}
Module::~Module() = default;

void Module::check_new_name(const std::string& name, const char* what) const {
  STRATA_CHECK_VALUE(!name.empty(), "[", what, "] the name must not be empty");
  STRATA_CHECK_VALUE(name.find('.') == std::string::npos, "[", what, "] the name '", name,
                     "' must not contain '.'");
  auto taken = [&](const auto& list) {
    for (const auto& entry : list)
      if (entry.name == name) return true;
    return false;
  };
  bool child_taken = false;
  for (const auto& [child_name, child] : children_) child_taken |= child_name == name;
  STRATA_CHECK_VALUE(!taken(parameters_) && !taken(buffers_) && !child_taken, "[", what, "] '", name,
                     "' is already registered in ", type_name_of(*this));
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "register_parameter");
  if (tensor.defined()) {
    // A parameter is a leaf: detach from any graph that produced the initial values.
    if (!tensor.is_leaf()) tensor = tensor.detach();
    tensor.requires_grad_(requires_grad);
  }
  parameters_.push_back({std::move(name), std::move(tensor)});
  return parameters_.back().tensor;
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  check_new_name(name, "register_buffer");
  buffers_.push_back({std::move(name), std::move(tensor)});
  return buffers_.back().tensor;
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  check_new_name(name, "register_module");
  STRATA_CHECK_VALUE(module != nullptr, "[register_module] the module '", name, "' is empty");
  children_.emplace_back(std::move(name), std::move(module));
}

template <class Fn>
void Module::visit_named(const std::string& prefix, bool recurse, bool params, const Fn& fn) const {
  for (const NamedTensor& entry : params ? parameters_ : buffers_)
    if (entry.tensor.defined()) fn(dotted(prefix, entry.name), entry.tensor);
  if (!recurse) return;
  for (const auto& [name, child] : children_) child->visit_named(dotted(prefix, name), true, params, fn);
}

// A tensor registered twice (tied weights) is listed once, under its first name, as PyTorch's
// named_parameters(remove_duplicate=True) does; state_dict keeps every name.
std::vector<std::pair<std::string, Tensor>> Module::unique_named(bool recurse, bool params) const {
  std::vector<std::pair<std::string, Tensor>> result;
  std::unordered_set<const TensorImpl*> seen;
  visit_named("", recurse, params, [&](const std::string& name, const Tensor& t) {
    if (seen.insert(t.impl()).second) result.emplace_back(name, t);
  });
  return result;
}

tensor_list Module::parameters(bool recurse) const {
  tensor_list result;
  for (auto& [name, t] : unique_named(recurse, true)) result.push_back(t);
  return result;
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  return unique_named(recurse, true);
}

tensor_list Module::buffers(bool recurse) const {
  tensor_list result;
  for (auto& [name, t] : unique_named(recurse, false)) result.push_back(t);
  return result;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  return unique_named(recurse, false);
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> result;
  for (const auto& [name, child] : children_) result.push_back(child);
  return result;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const { return children_; }

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> result;
  // The root may live on the stack (a user module used by value): then alias it without owning.
  std::shared_ptr<Module> root = std::const_pointer_cast<Module>(weak_from_this().lock());
  if (!root) root = std::shared_ptr<Module>(std::shared_ptr<Module>(), const_cast<Module*>(this));
  result.emplace_back("", std::move(root));
  for (const auto& [name, child] : children_)
    for (auto& [sub_name, sub] : child->named_modules())
      result.emplace_back(sub_name.empty() ? name : dotted(name, sub_name), sub);
  return result;
}

void Module::train(bool on) {
  is_training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

void Module::apply_to_tensors(const std::function<Tensor(const Tensor&)>& convert) {
  NoGradGuard no_grad;
  for (NamedTensor& entry : parameters_) {
    if (!entry.tensor.defined()) continue;
    Tensor converted = convert(entry.tensor);
    if (converted.is_same(entry.tensor)) continue;
    const bool requires_grad = entry.tensor.requires_grad();
    const Tensor grad = entry.tensor.grad();
    converted = converted.detach();
    converted.requires_grad_(requires_grad);
    if (grad.defined()) converted.set_grad(convert(grad));
    entry.tensor = converted;
  }
  for (NamedTensor& entry : buffers_)
    if (entry.tensor.defined()) entry.tensor = convert(entry.tensor);
  for (const auto& [name, child] : children_) child->apply_to_tensors(convert);
}

void Module::to(Device device) {
  apply_to_tensors([&](const Tensor& t) { return t.device() == device ? t : t.to(device); });
}

void Module::to(ScalarType dtype) {
  STRATA_CHECK_TYPE(is_floating_point(dtype), "[Module::to] expected a floating-point dtype, got ", dtype);
  apply_to_tensors([&](const Tensor& t) { return !t.is_floating_point() || t.dtype() == dtype ? t : t.to(dtype); });
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Tensor& p : parameters()) {
    const Tensor grad = p.grad();
    if (!grad.defined()) continue;
    if (set_to_none) p.set_grad(Tensor());
    else grad.detach().zero_();
  }
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> result;
  // Detached views, as PyTorch's state_dict(keep_vars=False): they share storage, not history.
  for (bool params : {true, false})
    visit_named("", true, params, [&](const std::string& name, const Tensor& t) { result[name] = t.detach(); });
  return result;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  const std::map<std::string, Tensor> own = state_dict();
  std::vector<std::string> missing, unexpected, mismatched, unreadable;
  for (const auto& [name, t] : own) {
    auto it = state.find(name);
    if (it == state.end()) missing.push_back(name);
    else if (it->second.defined() && it->second.is_meta()) {
      unreadable.push_back(name);
    } else if (!it->second.defined() || it->second.sizes() != t.sizes()) {
      std::ostringstream line;
      line << name << ": expected shape " << t.sizes() << ", got ";
      if (it->second.defined()) line << it->second.sizes();
      else line << "an undefined tensor";
      mismatched.push_back(line.str());
    }
  }
  for (const auto& [name, t] : state)
    if (!own.count(name)) unexpected.push_back(name);
  std::string problems;
  if (strict && !missing.empty()) problems += "; missing keys: " + join(missing);
  if (strict && !unexpected.empty()) problems += "; unexpected keys: " + join(unexpected);
  if (!mismatched.empty()) problems += "; size mismatch for " + join(mismatched);
  if (!unreadable.empty()) problems += "; Meta tensors (no values to load) for " + join(unreadable);
  STRATA_CHECK_VALUE(problems.empty(), "[load_state_dict] cannot load into ", type_name_of(*this), problems);
  NoGradGuard no_grad;
  for (const auto& [name, t] : own)
    if (auto it = state.find(name); it != state.end()) t.copy_(it->second);
}

void Module::pretty_print(std::ostream& stream) const { stream << (name_.empty() ? type_name_of(*this) : name_); }

namespace {
void print_tree(std::ostream& stream, const Module& module, const std::string& indent) {
  std::ostringstream line;
  module.pretty_print(line);
  stream << line.str();
  const auto children = module.named_children();
  if (children.empty()) {
    if (!line.str().ends_with(")")) stream << "()";  // a bare name: "ReLU()"
    return;
  }
  stream << "(\n";
  for (const auto& [name, child] : children) {
    stream << indent << "  (" << name << "): ";
    print_tree(stream, *child, indent + "  ");
    stream << "\n";
  }
  stream << indent << ")";
}
}  // namespace

std::ostream& operator<<(std::ostream& stream, const Module& module) {
  print_tree(stream, module, "");
  return stream;
}

}  // namespace strata::nn
