// Names of dispatch keys, for messages and dumps.
#include <strata/tensor/dispatch_key.h>

#include <ostream>

namespace strata {

std::string_view dispatch_key_name(DispatchKey key) {
  switch (key) {
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::Meta: return "Meta";
    case DispatchKey::AutogradMeta: return "AutogradMeta";
    case DispatchKey::AutogradCPU: return "AutogradCPU";
    case DispatchKey::AutogradCUDA: return "AutogradCUDA";
    case DispatchKey::Autograd: return "Autograd";
    case DispatchKey::Tracer: return "Tracer";
    case DispatchKey::CompositeImplicitAutograd: return "CompositeImplicitAutograd";
    case DispatchKey::CompositeExplicitAutograd: return "CompositeExplicitAutograd";
  }
  return "Unknown";
}
std::ostream& operator<<(std::ostream& out, DispatchKey key) { return out << dispatch_key_name(key); }
std::ostream& operator<<(std::ostream& out, DispatchKeySet set) {
  out << "DispatchKeySet(";
  bool first = true;
  for (int k = kNumRuntimeKeys - 1; k >= 0; --k) {
    if (!set.has(static_cast<DispatchKey>(k))) continue;
    out << (first ? "" : ", ") << static_cast<DispatchKey>(k);
    first = false;
  }
  return out << ")";
}


}  // namespace strata
