#pragma once
// Grad mode is the Autograd key's presence in the thread's exclude set: a NoGradGuard call
// pays for nothing beyond the backend kernel.
#include <strata/dispatch/dispatcher.h>

namespace strata {

bool is_grad_enabled();

// Stops recording on this thread for a scope.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  DispatchKeySet previous_;
};

// Records again on this thread for a scope (inside a NoGradGuard, say).
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  DispatchKeySet previous_;
};

namespace autograd {
// Sets grad mode for a scope: enabled or not.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  DispatchKeySet previous_;
};
}  // namespace autograd

}  // namespace strata
