// Learning-rate schedulers, in torch.optim.lr_scheduler's chainable form so that the lrs match
// PyTorch's to the last bit.
#include <strata/nn/optim.h>

#include <cmath>
#include <numbers>

namespace strata::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (const ParamGroup& group : optimizer.param_groups()) base_lrs_.push_back(group.options().get_lr());
  last_lr_ = base_lrs_;
}

void LRScheduler::step() {
  ++last_epoch_;
  std::vector<double> current;
  for (const ParamGroup& group : optimizer_.param_groups()) current.push_back(group.options().get_lr());
  // A group added after the scheduler was made starts from its lr at this step.
  for (size_t g = base_lrs_.size(); g < current.size(); ++g) base_lrs_.push_back(current[g]);
  last_lr_ = get_lr(current);
  for (size_t g = 0; g < last_lr_.size() && g < optimizer_.param_groups().size(); ++g)
    optimizer_.param_groups()[g].options().set_lr(last_lr_[g]);
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  STRATA_CHECK_VALUE(step_size > 0, "[StepLR] step_size must be positive, got ", step_size);
}

std::vector<double> StepLR::get_lr(const std::vector<double>& current) const {
  if (last_epoch() == 0 || last_epoch() % step_size_ != 0) return current;
  std::vector<double> result;
  for (double lr : current) result.push_back(lr * gamma_);
  return result;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  STRATA_CHECK_VALUE(T_max > 0, "[CosineAnnealingLR] T_max must be positive, got ", T_max);
}

// PyTorch's recursive form: each lr follows from the previous one, restarting the cosine every
// 2 * T_max epochs.
std::vector<double> CosineAnnealingLR::get_lr(const std::vector<double>& current) const {
  const double pi = std::numbers::pi, t_max = static_cast<double>(t_max_);
  const int64_t epoch = last_epoch();
  if (epoch == 0) return current;
  std::vector<double> result;
  const int64_t period = 2 * t_max_, offset = ((epoch - 1 - t_max_) % period + period) % period;
  for (size_t g = 0; g < current.size(); ++g) {
    if (offset == 0) {
      result.push_back(current[g] + (base_lrs()[g] - eta_min_) * (1 - std::cos(pi / t_max)) / 2);
    } else {
      const double ratio = (1 + std::cos(pi * static_cast<double>(epoch) / t_max)) /
                           (1 + std::cos(pi * static_cast<double>(epoch - 1) / t_max));
      result.push_back(ratio * (current[g] - eta_min_) + eta_min_);
    }
  }
  return result;
}

}  // namespace strata::optim
