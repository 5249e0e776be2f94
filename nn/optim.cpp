// Optimizers: options, parameter groups, state dicts, and the SGD/Adam/AdamW steps (which run
// the fused ops of ops/optim.cpp, see Note [Fused optimizer steps]).
#include <strata/autograd/grad_mode.h>
#include <strata/nn/optim.h>
#include <strata/ops/optim.h>

#include <algorithm>
#include <set>
#include <utility>

namespace strata::optim {
namespace {

bool as_bool(double value) { return value != 0; }

[[noreturn]] void throw_unknown_option(const char* options, const std::string& name) {
  strata::detail::throw_error<ValueError>("[", options, "] unknown option '", name, "'");
}

Tensor scalar_tensor(double value) { return full({}, value, kFloat64); }

std::string group_key(size_t group, const std::string& name) {
  return "param_groups." + std::to_string(group) + "." + name;
}

std::string state_key(size_t index, const std::string& name) {
  return "state." + std::to_string(index) + "." + name;
}

// The state tensor `name` of `param`, created as zeros on first use; `created` says whether it was.
Tensor state_tensor(std::map<std::string, Tensor>& state, const std::string& name, const Tensor& param,
                    bool* created = nullptr) {
  auto it = state.find(name);
  if (created) *created = it == state.end();
  if (it != state.end()) return it->second;
  return state[name] = zeros_like(param);
}

// Note [One fused call per parameter bucket]
// A step makes one list call of the fused ops (Note [Multi-tensor optimizer steps] in
// ops/optim.cpp) per bucket of a group's parameters with gradients: one bucket per (device,
// dtype, flag), the flag being what the call takes once for the whole list (SGD: whether the
// momentum buffer was just created). State is created lazily in parameter order, as before,
// and every parameter gets the same per-tensor step, so results do not change. A group has few
// buckets, found by a linear search; a new one reserves room for the whole group.
template <class Bucket>
Bucket& bucket_for(std::vector<Bucket>& buckets, const Tensor& param, bool flag, size_t group_size) {
  for (Bucket& bucket : buckets)
    if (bucket.device == param.device() && bucket.dtype == param.dtype() && bucket.flag == flag) return bucket;
  Bucket& added = buckets.emplace_back();
  added.device = param.device();
  added.dtype = param.dtype();
  added.flag = flag;
  added.reserve(group_size);
  return added;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Options.

std::vector<std::pair<std::string, double>> SGDOptions::values() const {
  return {{"lr", lr_},          {"momentum", momentum_}, {"dampening", dampening_}, {"weight_decay", weight_decay_},
          {"nesterov", nesterov_}, {"maximize", maximize_}};
}

void SGDOptions::set_value(const std::string& name, double value) {
  if (name == "lr") lr_ = value;
  else if (name == "momentum") momentum_ = value;
  else if (name == "dampening") dampening_ = value;
  else if (name == "weight_decay") weight_decay_ = value;
  else if (name == "nesterov") nesterov_ = as_bool(value);
  else if (name == "maximize") maximize_ = as_bool(value);
  else throw_unknown_option("SGDOptions", name);
}

template <class Derived>
void detail::AdamOptionsBase<Derived>::set_value(const std::string& name, double value) {
  if (name == "lr") lr_ = value;
  else if (name == "beta1") betas_.first = value;
  else if (name == "beta2") betas_.second = value;
  else if (name == "eps") eps_ = value;
  else if (name == "weight_decay") weight_decay_ = value;
  else if (name == "amsgrad") amsgrad_ = as_bool(value);
  else if (name == "maximize") maximize_ = as_bool(value);
  else throw_unknown_option("AdamOptions", name);
}
template class detail::AdamOptionsBase<AdamOptions>;
template class detail::AdamOptionsBase<AdamWOptions>;

// ---------------------------------------------------------------------------------------
// Parameter groups.

ParamGroup::ParamGroup(tensor_list params) : params_(std::move(params)) {}
ParamGroup::ParamGroup(tensor_list params, const OptimizerOptions& options)
    : params_(std::move(params)), options_(options.clone()) {}
ParamGroup::ParamGroup(tensor_list params, std::unique_ptr<OptimizerOptions> options)
    : params_(std::move(params)), options_(std::move(options)) {}
ParamGroup::ParamGroup(const ParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}
ParamGroup& ParamGroup::operator=(const ParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
  }
  return *this;
}

OptimizerOptions& ParamGroup::options() {
  STRATA_CHECK_VALUE(options_ != nullptr, "[ParamGroup] this group has no options yet");
  return *options_;
}
const OptimizerOptions& ParamGroup::options() const {
  STRATA_CHECK_VALUE(options_ != nullptr, "[ParamGroup] this group has no options yet");
  return *options_;
}

// ---------------------------------------------------------------------------------------
// Optimizer.

// Subclasses add their groups in their own constructors, where check_options reaches them.
Optimizer::Optimizer(std::string name, std::unique_ptr<OptimizerOptions> defaults)
    : name_(std::move(name)), defaults_(std::move(defaults)) {}

Optimizer::~Optimizer() = default;

void Optimizer::add_param_group(const ParamGroup& group) {
  ParamGroup added = group;
  if (!added.has_options()) added.set_options(defaults_->clone());
  check_options(added.options());
  std::set<const TensorImpl*> seen;
  for (const ParamGroup& existing : param_groups_)
    for (const Tensor& p : existing.params()) seen.insert(p.impl());
  for (const Tensor& p : added.params()) {
    STRATA_CHECK_VALUE(p.defined(), "[", name_, "] a parameter is undefined");
    STRATA_CHECK_VALUE(p.is_leaf(), "[", name_, "] can't optimize a non-leaf tensor (shape ", p.sizes(), ")");
    STRATA_CHECK_TYPE(p.is_floating_point(), "[", name_, "] parameters must be floating point, got ", p.dtype());
    STRATA_CHECK_VALUE(seen.insert(p.impl()).second, "[", name_, "] a parameter (shape ", p.sizes(),
                       ") appears in more than one parameter group");
  }
  param_groups_.push_back(std::move(added));
}

void Optimizer::zero_grad(bool set_to_none) {
  for (const ParamGroup& group : param_groups_)
    for (const Tensor& p : group.params()) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (set_to_none) p.set_grad(Tensor());
      else {
        NoGradGuard no_grad;
        grad.detach().zero_();
      }
    }
}

const std::map<std::string, Tensor>& Optimizer::state(const Tensor& param) const {
  static const std::map<std::string, Tensor> empty_state;
  auto it = state_.find(param.impl());
  return it == state_.end() ? empty_state : it->second;
}

std::map<std::string, Tensor> Optimizer::state_dict() const {
  std::map<std::string, Tensor> result;
  size_t index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const ParamGroup& group = param_groups_[g];
    for (const auto& [name, value] : group.options().values()) result[group_key(g, name)] = scalar_tensor(value);
    std::vector<int64_t> indices;
    for (const Tensor& p : group.params()) {
      indices.push_back(static_cast<int64_t>(index));
      for (const auto& [name, t] : state(p)) result[state_key(index, name)] = t;
      ++index;
    }
    result[group_key(g, "params")] = tensor(indices, {static_cast<int64_t>(indices.size())}, kInt64);
  }
  return result;
}

namespace {

// "state.<index>.<name>" -> (index, name); ValueError for a malformed key.
std::pair<size_t, std::string> parse_state_key(const std::string& key) {
  const size_t dot = key.find('.', 6);
  const std::string digits = dot == std::string::npos ? "" : key.substr(6, dot - 6);
  const bool numeric = !digits.empty() && digits.size() < 10 &&
                       std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  STRATA_CHECK_VALUE(numeric && dot + 1 < key.size(), "[load_state_dict] malformed key '", key,
                     "': expected state.<parameter index>.<name>");
  return {std::stoul(digits), key.substr(dot + 1)};
}

bool is_state_key(const std::string& key) { return key.rfind("state.", 0) == 0; }

}  // namespace

void Optimizer::check_loadable(const std::map<std::string, Tensor>& state_dict, const tensor_list& params) const {
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    auto it = state_dict.find(group_key(g, "params"));
    STRATA_CHECK_VALUE(it != state_dict.end(), "[load_state_dict] ", name_, " has ", param_groups_.size(),
                       " parameter groups but the state dict has no '", group_key(g, "params"), "'");
    STRATA_CHECK_VALUE(it->second.numel() == static_cast<int64_t>(param_groups_[g].params().size()),
                       "[load_state_dict] parameter group ", g, " has ", param_groups_[g].params().size(),
                       " parameters but the state dict's has ", it->second.numel());
  }
  // Every value the load reads must be readable, so that a bad one fails here and not halfway.
  for (size_t g = 0; g < param_groups_.size(); ++g)
    for (const auto& [name, value] : param_groups_[g].options().values())
      if (auto it = state_dict.find(group_key(g, name)); it != state_dict.end())
        STRATA_CHECK_VALUE(it->second.defined() && it->second.numel() == 1 && !it->second.is_meta(),
                           "[load_state_dict] '", it->first, "' must be a single value on a device with data, got ",
                           it->second.defined() ? it->second.numel() : 0, " values",
                           it->second.defined() && it->second.is_meta() ? " on Meta" : "");
  STRATA_CHECK_VALUE(!state_dict.count(group_key(param_groups_.size(), "params")),
                     "[load_state_dict] the state dict has more parameter groups than ", name_, "'s ",
                     param_groups_.size());
  for (const auto& [key, t] : state_dict) {
    if (!is_state_key(key)) continue;
    const auto [index, name] = parse_state_key(key);
    STRATA_CHECK_VALUE(index < params.size(), "[load_state_dict] '", key, "' names parameter ", index, " but ",
                       name_, " has ", params.size());
    STRATA_CHECK_VALUE(t.defined() && (name == "step" || t.sizes() == params[index].sizes()), "[load_state_dict] '",
                       key, "' has shape ", t.defined() ? t.sizes() : IntArrayRef(), " but parameter ", index,
                       " has shape ", params[index].sizes());
    STRATA_CHECK_VALUE(!t.is_meta(), "[load_state_dict] '", key, "' is a Meta tensor, which has no values to load");
  }
}

void Optimizer::load_state_dict(const std::map<std::string, Tensor>& state_dict) {
  tensor_list params;
  for (const ParamGroup& group : param_groups_) params.insert(params.end(), group.params().begin(), group.params().end());
  check_loadable(state_dict, params);  // first, so that a bad dict leaves the optimizer as it was
  for (size_t g = 0; g < param_groups_.size(); ++g)
    for (const auto& [name, value] : param_groups_[g].options().values())
      if (auto it = state_dict.find(group_key(g, name)); it != state_dict.end())
        param_groups_[g].options().set_value(name, it->second.item<double>());
  state_.clear();
  NoGradGuard no_grad;
  for (const auto& [key, t] : state_dict) {
    if (!is_state_key(key)) continue;
    const auto [index, name] = parse_state_key(key);
    const Tensor& param = params[index];
    // State follows its parameter's dtype and device; the step count stays a CPU int64.
    Tensor value = name == "step" ? t.to(TensorOptions().dtype(kInt64).device(kCPU)) : t.to(param.options());
    state_[param.impl()][name] = value.is_same(t) ? t.clone() : value;
  }
}

// ---------------------------------------------------------------------------------------
// SGD.

SGD::SGD(tensor_list params, const SGDOptions& defaults) : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults)
    : Optimizer("SGD", defaults.clone()) {
  check_options(defaults);
  for (const ParamGroup& group : groups) add_param_group(group);
}

void SGD::check_options(const OptimizerOptions& base) const {
  const auto* options = dynamic_cast<const SGDOptions*>(&base);
  STRATA_CHECK_TYPE(options != nullptr, "[SGD] parameter group options must be SGDOptions");
  STRATA_CHECK_VALUE(options->lr() >= 0, "[SGD] invalid learning rate ", options->lr(), " (must be >= 0)");
  STRATA_CHECK_VALUE(options->momentum() >= 0, "[SGD] invalid momentum ", options->momentum(), " (must be >= 0)");
  STRATA_CHECK_VALUE(options->weight_decay() >= 0, "[SGD] invalid weight_decay ", options->weight_decay(),
                     " (must be >= 0)");
  STRATA_CHECK_VALUE(!options->nesterov() || (options->momentum() > 0 && options->dampening() == 0),
                     "[SGD] nesterov momentum requires a momentum > 0 and zero dampening, got momentum ",
                     options->momentum(), " and dampening ", options->dampening());
}

namespace {
// See Note [One fused call per parameter bucket]; flag: the momentum buffers were just created.
struct SgdBucket {
  Device device = Device(kCPU);
  ScalarType dtype = kFloat32;
  bool flag = false;
  tensor_list params, grads, momentum_buffers;
  void reserve(size_t size) {
    for (tensor_list* list : {&params, &grads, &momentum_buffers}) list->reserve(size);
  }
};
}  // namespace

void SGD::step() {
  NoGradGuard no_grad;
  for (ParamGroup& group : param_groups()) {
    const auto& options = static_cast<const SGDOptions&>(group.options());
    std::vector<SgdBucket> buckets;
    for (const Tensor& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      Tensor buffer;
      bool first = false;
      if (options.momentum() != 0) buffer = state_tensor(mutable_state(p), "momentum_buffer", p, &first);
      SgdBucket& bucket = bucket_for(buckets, p, first, group.params().size());
      bucket.params.push_back(p);
      bucket.grads.push_back(std::move(grad));
      if (buffer.defined()) bucket.momentum_buffers.push_back(std::move(buffer));
    }
    for (const SgdBucket& bucket : buckets)
      _fused_sgd_(bucket.params, bucket.grads, bucket.momentum_buffers, options.lr(), options.momentum(),
                  options.dampening(), options.weight_decay(), options.nesterov(), options.maximize(), bucket.flag);
  }
}

// ---------------------------------------------------------------------------------------
// Adam and AdamW.

namespace {

template <class Options>
void check_adam_options(const char* name, const OptimizerOptions& base) {
  const auto* options = dynamic_cast<const Options*>(&base);
  STRATA_CHECK_TYPE(options != nullptr, "[", name, "] parameter group options must be ", name, "Options");
  const auto [beta1, beta2] = options->betas();
  STRATA_CHECK_VALUE(options->lr() >= 0, "[", name, "] invalid learning rate ", options->lr(), " (must be >= 0)");
  STRATA_CHECK_VALUE(options->eps() >= 0, "[", name, "] invalid eps ", options->eps(), " (must be >= 0)");
  STRATA_CHECK_VALUE(beta1 >= 0 && beta1 < 1, "[", name, "] invalid beta1 ", beta1, " (must be in [0, 1))");
  STRATA_CHECK_VALUE(beta2 >= 0 && beta2 < 1, "[", name, "] invalid beta2 ", beta2, " (must be in [0, 1))");
  STRATA_CHECK_VALUE(options->weight_decay() >= 0, "[", name, "] invalid weight_decay ", options->weight_decay(),
                     " (must be >= 0)");
}

// See Note [One fused call per parameter bucket]; flag unused (amsgrad is the group's).
struct AdamBucket {
  Device device = Device(kCPU);
  ScalarType dtype = kFloat32;
  bool flag = false;
  tensor_list params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
  std::vector<int64_t> steps;
  void reserve(size_t size) {
    for (tensor_list* list : {&params, &grads, &exp_avgs, &exp_avg_sqs, &max_exp_avg_sqs}) list->reserve(size);
    steps.reserve(size);
  }
};

// One Adam or AdamW step for every parameter with a gradient; `state` gives each one's state.
template <class Options, class StateOf>
void adam_step(std::vector<ParamGroup>& groups, const StateOf& state_of, bool decoupled) {
  NoGradGuard no_grad;
  for (ParamGroup& group : groups) {
    const auto& options = static_cast<const Options&>(group.options());
    std::vector<AdamBucket> buckets;
    for (const Tensor& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      std::map<std::string, Tensor>& state = state_of(p);
      auto step_it = state.find("step");
      if (step_it == state.end()) step_it = state.emplace("step", full({}, 0, kInt64)).first;
      const int64_t step = step_it->second.template item<int64_t>() + 1;
      fill_(step_it->second, step);
      const Tensor exp_avg = state_tensor(state, "exp_avg", p), exp_avg_sq = state_tensor(state, "exp_avg_sq", p);
      AdamBucket& bucket = bucket_for(buckets, p, false, group.params().size());
      bucket.params.push_back(p);
      bucket.grads.push_back(std::move(grad));
      bucket.exp_avgs.push_back(exp_avg);
      bucket.exp_avg_sqs.push_back(exp_avg_sq);
      if (options.amsgrad()) bucket.max_exp_avg_sqs.push_back(state_tensor(state, "max_exp_avg_sq", p));
      bucket.steps.push_back(step);
    }
    for (const AdamBucket& bucket : buckets)
      _fused_adam_(bucket.params, bucket.grads, bucket.exp_avgs, bucket.exp_avg_sqs, bucket.max_exp_avg_sqs,
                   bucket.steps, options.lr(), options.betas().first, options.betas().second, options.weight_decay(),
                   options.eps(), options.amsgrad(), options.maximize(), decoupled);
  }
}

}  // namespace

Adam::Adam(tensor_list params, const AdamOptions& defaults)
    : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults) : Optimizer("Adam", defaults.clone()) {
  check_options(defaults);
  for (const ParamGroup& group : groups) add_param_group(group);
}

void Adam::check_options(const OptimizerOptions& options) const { check_adam_options<AdamOptions>("Adam", options); }

void Adam::step() {
  adam_step<AdamOptions>(param_groups(), [this](const Tensor& p) -> auto& { return mutable_state(p); }, false);
}

AdamW::AdamW(tensor_list params, const AdamWOptions& defaults)
    : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : Optimizer("AdamW", defaults.clone()) {
  check_options(defaults);
  for (const ParamGroup& group : groups) add_param_group(group);
}

void AdamW::check_options(const OptimizerOptions& options) const {
  check_adam_options<AdamWOptions>("AdamW", options);
}

void AdamW::step() {
  adam_step<AdamWOptions>(param_groups(), [this](const Tensor& p) -> auto& { return mutable_state(p); }, true);
}

}  // namespace strata::optim
