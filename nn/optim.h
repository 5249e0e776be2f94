#pragma once
// Optimizers (SGD, Adam, AdamW) with parameter groups and state dicts, and learning-rate
// schedulers (StepLR, CosineAnnealingLR), following torch.optim's math and LibTorch's names.
// Each step runs the fused ops of ops/optim.h, one pass per parameter.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <strata/ops/ops.h>

namespace strata::optim {

// The options of one parameter group. Each optimizer has its own subclass with chainable setters.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // Every option as a named number (bools as 0 or 1), for state dicts.
  virtual std::vector<std::pair<std::string, double>> values() const = 0;
  // Sets one option by the name values() gives it (ValueError for an unknown name).
  virtual void set_value(const std::string& name, double value) = 0;
};

class SGDOptions : public OptimizerOptions {
 public:
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& lr(double value) { lr_ = value; return *this; }
  SGDOptions& momentum(double value) { momentum_ = value; return *this; }
  SGDOptions& dampening(double value) { dampening_ = value; return *this; }
  SGDOptions& weight_decay(double value) { weight_decay_ = value; return *this; }
  SGDOptions& nesterov(bool value) { nesterov_ = value; return *this; }
  SGDOptions& maximize(bool value) { maximize_ = value; return *this; }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<SGDOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> values() const override;
  void set_value(const std::string& name, double value) override;

 private:
  double lr_, momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false, maximize_ = false;
};

namespace detail {
// The options Adam and AdamW share; Derived is the class the setters return.
template <class Derived>
class AdamOptionsBase : public OptimizerOptions {
 public:
  AdamOptionsBase(double lr, double weight_decay) : lr_(lr), weight_decay_(weight_decay) {}
  Derived& lr(double value) { lr_ = value; return self(); }
  Derived& betas(std::pair<double, double> value) { betas_ = value; return self(); }
  Derived& eps(double value) { eps_ = value; return self(); }
  Derived& weight_decay(double value) { weight_decay_ = value; return self(); }
  Derived& amsgrad(bool value) { amsgrad_ = value; return self(); }
  Derived& maximize(bool value) { maximize_ = value; return self(); }
  double lr() const { return lr_; }
  const std::pair<double, double>& betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool amsgrad() const { return amsgrad_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<Derived>(self()); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> values() const override {
    return {{"lr", lr_}, {"beta1", betas_.first}, {"beta2", betas_.second}, {"eps", eps_},
            {"weight_decay", weight_decay_}, {"amsgrad", amsgrad_}, {"maximize", maximize_}};
  }
  void set_value(const std::string& name, double value) override;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  const Derived& self() const { return static_cast<const Derived&>(*this); }
  double lr_;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8, weight_decay_;
  bool amsgrad_ = false, maximize_ = false;
};
}  // namespace detail

class AdamOptions : public detail::AdamOptionsBase<AdamOptions> {
 public:
  explicit AdamOptions(double lr = 1e-3) : AdamOptionsBase(lr, 0) {}
};

// As AdamOptions, with the decoupled weight decay defaulting to 1e-2.
class AdamWOptions : public detail::AdamOptionsBase<AdamWOptions> {
 public:
  explicit AdamWOptions(double lr = 1e-3) : AdamOptionsBase(lr, 1e-2) {}
};

// Parameters that share options. A group made without options takes the optimizer's defaults.
class ParamGroup {
 public:
  ParamGroup(tensor_list params);  // NOLINT: implicit like LibTorch's OptimizerParamGroup
  ParamGroup(tensor_list params, const OptimizerOptions& options);
  ParamGroup(tensor_list params, std::unique_ptr<OptimizerOptions> options);
  ParamGroup(const ParamGroup& other);
  ParamGroup& operator=(const ParamGroup& other);
  ParamGroup(ParamGroup&&) = default;
  ParamGroup& operator=(ParamGroup&&) = default;

  tensor_list& params() { return params_; }
  const tensor_list& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }

 private:
  tensor_list params_;
  std::unique_ptr<OptimizerOptions> options_;
};

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient.
  virtual void step() = 0;
  // Clears the gradients: undefined when set_to_none (the default, as PyTorch), else zero.
  void zero_grad(bool set_to_none = true);
  // Adds parameters with their own options (or the defaults); a parameter may be in one group only.
  void add_param_group(const ParamGroup& group);

  std::vector<ParamGroup>& param_groups() { return param_groups_; }
  const std::vector<ParamGroup>& param_groups() const { return param_groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  // The per-parameter state by name ("momentum_buffer", "exp_avg", "step"...); empty until a step.
  const std::map<std::string, Tensor>& state(const Tensor& param) const;

  // "state.<i>.<name>" for parameter i (numbered across the groups in order), and
  // "param_groups.<g>.<option>" (0-d float64) and "param_groups.<g>.params" (the indices).
  std::map<std::string, Tensor> state_dict() const;
  // Restores state and group options saved by state_dict() of an optimizer with the same groups
  // and parameter shapes; ValueError "[load_state_dict] ..." otherwise.
  void load_state_dict(const std::map<std::string, Tensor>& state_dict);

 protected:
  Optimizer(std::string name, std::unique_ptr<OptimizerOptions> defaults);
  // Throws ValueError "[<name>] ..." for options out of range.
  virtual void check_options(const OptimizerOptions& options) const = 0;
  std::map<std::string, Tensor>& mutable_state(const Tensor& param) { return state_[param.impl()]; }
  const std::string& name() const { return name_; }

 private:
  void check_loadable(const std::map<std::string, Tensor>& state_dict, const tensor_list& params) const;

  std::string name_;
  std::vector<ParamGroup> param_groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::unordered_map<const TensorImpl*, std::map<std::string, Tensor>> state_;
};

// torch.optim.SGD: momentum (buffer starts as the first gradient), dampening, Nesterov, weight decay.
class SGD : public Optimizer {
 public:
  SGD(tensor_list params, const SGDOptions& defaults);
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);
  void step() override;

 protected:
  void check_options(const OptimizerOptions& options) const override;
};

// torch.optim.Adam (L2 weight decay added to the gradient; amsgrad optional).
class Adam : public Optimizer {
 public:
  Adam(tensor_list params, const AdamOptions& defaults = AdamOptions());
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults = AdamOptions());
  void step() override;

 protected:
  void check_options(const OptimizerOptions& options) const override;
};

// torch.optim.AdamW: Adam with decoupled weight decay (param *= 1 - lr * weight_decay).
class AdamW : public Optimizer {
 public:
  AdamW(tensor_list params, const AdamWOptions& defaults = AdamWOptions());
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults = AdamWOptions());
  void step() override;

 protected:
  void check_options(const OptimizerOptions& options) const override;
};

// Learning-rate schedulers: construction records each group's lr as its base; step() moves
// to the next epoch and sets the groups' lrs with torch.optim.lr_scheduler's formulas.
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  void step();
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }

 protected:
  // The lrs for last_epoch() from the groups' current lrs (PyTorch's chainable form).
  virtual std::vector<double> get_lr(const std::vector<double>& current) const = 0;

 private:
  Optimizer& optimizer_;
  std::vector<double> base_lrs_, last_lr_;
  int64_t last_epoch_ = 0;
};

// lr = base_lr * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr(const std::vector<double>& current) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  std::vector<double> get_lr(const std::vector<double>& current) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

}  // namespace strata::optim
