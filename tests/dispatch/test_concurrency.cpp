// Calls read the dispatch table without a lock while another thread registers and unregisters.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include <strata/strata.h>

using namespace strata;

namespace {
Tensor constant(float value) {
  Tensor t = detail::make_empty({}, kFloat32, kCPU);
  *t.data_ptr<float>() = value;
  return t;
}
}  // namespace

TEST_CASE("concurrency: every call sees the old or the new kernel while kernels come and go") {
  Library def("conc_test", Library::DEF);
  def.def("value(Tensor x) -> Tensor");
  Library base("conc_test", Library::IMPL, DispatchKey::CPU);
  base.impl("value", [](const Tensor&) { return constant(1); });
  auto op = find_op("conc_test::value").typed<Tensor(const Tensor&)>();
  Tensor x = constant(0);

  std::atomic<bool> stop{false};
  std::atomic<int64_t> old_seen{0}, new_seen{0}, bad_seen{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      while (!stop.load()) {
        float v = op.call(x).item<float>();
        (v == 1 ? old_seen : v == 2 ? new_seen : bad_seen).fetch_add(1);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) {
    int captured = 2;  // a stateful kernel, so its state must outlive concurrent calls
    Library replacement("conc_test", Library::IMPL, DispatchKey::CPU);
    replacement.impl("value", [captured](const Tensor&) { return constant(static_cast<float>(captured)); });
    std::this_thread::yield();
  }
  stop = true;
  for (auto& caller : callers) caller.join();
  CHECK(bad_seen.load() == 0);
  CHECK(old_seen.load() + new_seen.load() > 0);
  CHECK(op.call(x).item<float>() == 1.0f);
}
