#pragma once
// Reads of tensor values into C++ (item()), reported to an observer on this thread.
// See Note [Host reads under tracing].

namespace strata::detail {

// Note [Host reads under tracing]
// A traced graph replays the ops it saw, not the C++ around them: a value read with item() and
// used in a branch or as a constant is frozen into the graph. jit::trace installs an observer
// for its thread to count such reads and warn, as torch.jit.trace does.
using HostReadObserver = void (*)(const char* what);
// Installs `observer` for this thread (null to remove); returns the previous one.
HostReadObserver set_host_read_observer(HostReadObserver observer);
// Tells this thread's observer, if any, that `what` read a tensor's value.
void notify_host_read(const char* what);

}  // namespace strata::detail
