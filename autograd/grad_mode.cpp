#include <strata/autograd/grad_mode.h>

namespace strata {

bool is_grad_enabled() { return !detail::local_dispatch_keys().excluded.has(DispatchKey::Autograd); }

NoGradGuard::NoGradGuard() {
  auto& local = detail::local_dispatch_keys();
  previous_ = local.excluded;
  local.excluded = local.excluded.add(DispatchKey::Autograd);
}
NoGradGuard::~NoGradGuard() { detail::local_dispatch_keys().excluded = previous_; }

EnableGradGuard::EnableGradGuard() {
  auto& local = detail::local_dispatch_keys();
  previous_ = local.excluded;
  local.excluded = local.excluded.remove(DispatchKey::Autograd);
}
EnableGradGuard::~EnableGradGuard() { detail::local_dispatch_keys().excluded = previous_; }

namespace autograd {
GradModeGuard::GradModeGuard(bool enabled) {
  auto& local = detail::local_dispatch_keys();
  previous_ = local.excluded;
  local.excluded = enabled ? local.excluded.remove(DispatchKey::Autograd) : local.excluded.add(DispatchKey::Autograd);
}
GradModeGuard::~GradModeGuard() { detail::local_dispatch_keys().excluded = previous_; }
}  // namespace autograd

}  // namespace strata
