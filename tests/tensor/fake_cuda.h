#pragma once
// A fake CUDA backend for the device-layer tests: DeviceHooks for kCUDA with two devices whose
// "device memory" is host memory from a counting provider, streams and events that only keep
// books, and CUDA kernels for copy_ and clone in a test Library (they treat the fake device
// memory as host memory; _to_copy reaches copy_ through its CompositeExplicitAutograd kernel). Constructing a FakeCudaBackend loads it; destroying it unloads.
#include <strata/dispatch/library.h>
#include <strata/ops/copy.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/ops.h>
#include <strata/tensor/device_hooks.h>
#include <strata/tensor/tensor_meta.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

namespace strata::testing {

// The fake driver's memory: counts mallocs and frees, like cudaMalloc/cudaFree would.
struct FakeMemoryProvider {
  std::atomic<int64_t> mallocs{0};
  std::atomic<int64_t> frees{0};
  void* malloc(size_t nbytes) {
    ++mallocs;
    return std::malloc(nbytes == 0 ? 1 : nbytes);
  }
  void free(void* data) {
    ++frees;
    std::free(data);
  }
};

// A caching allocator for one fake device: freed blocks are kept by exact size until empty_cache.
class FakeCachingAllocator final : public Allocator {
 public:
  FakeCachingAllocator(int device, FakeMemoryProvider* provider) : device_(device), provider_(provider) {}
  ~FakeCachingAllocator() override { empty_cache(); }

  DataPtr allocate(size_t nbytes) override {
    std::lock_guard lock(mutex_);
    void* block = nullptr;
    auto cached = cache_.find(nbytes);
    if (cached != cache_.end()) {
      block = cached->second;
      cache_.erase(cached);
    } else {
      block = provider_->malloc(nbytes);
      ++stats_.device_mallocs;
      stats_.reserved_bytes += static_cast<int64_t>(nbytes);
    }
    stats_.allocated_bytes += static_cast<int64_t>(nbytes);
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    return DataPtr{block, &release, this, Device(kCUDA, device_)};
  }
  MemoryStats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  void empty_cache() {
    std::lock_guard lock(mutex_);
    for (auto& [nbytes, block] : cache_) {
      provider_->free(block);
      stats_.reserved_bytes -= static_cast<int64_t>(nbytes);
    }
    cache_.clear();
  }

 private:
  static void release(void* data, void* context, size_t nbytes) {
    auto* self = static_cast<FakeCachingAllocator*>(context);
    std::lock_guard lock(self->mutex_);
    self->stats_.allocated_bytes -= static_cast<int64_t>(nbytes);
    self->cache_.emplace(nbytes, data);
  }
  int device_;
  FakeMemoryProvider* provider_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> cache_;
  MemoryStats stats_;
};

// Page-locked host memory stand-in: plain host blocks whose starts are remembered, so
// is_pinned can tell them from other CPU memory.
class FakePinnedAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    void* block = std::malloc(nbytes == 0 ? 1 : nbytes);
    std::lock_guard lock(mutex_);
    blocks_.insert(block);
    return DataPtr{block, &release, this, Device(kCPU)};
  }
  bool owns(const void* data) const {
    std::lock_guard lock(mutex_);
    return blocks_.count(const_cast<void*>(data)) != 0;
  }

 private:
  static void release(void* data, void* context, size_t) {
    auto* self = static_cast<FakePinnedAllocator*>(context);
    {
      std::lock_guard lock(self->mutex_);
      self->blocks_.erase(data);
    }
    std::free(data);
  }
  mutable std::mutex mutex_;
  std::set<void*> blocks_;
};
// Never destroyed: a pinned tensor may outlive the backend that made it.
inline FakePinnedAllocator& fake_pinned_allocator() {
  static auto* allocator = new FakePinnedAllocator;
  return *allocator;
}

struct FakeEvent {
  int device;
  int64_t stream;
  double time_ms;
  bool enable_timing;
};

// Streams: ids from 1 up; a stream is "busy" until synchronized when a test marks it so.
class FakeCudaHooks final : public DeviceHooks {
 public:
  static constexpr int kDevices = 2;

  FakeCudaHooks() {
    for (int device = 0; device < kDevices; ++device) {
      allocators[device] = std::make_unique<FakeCachingAllocator>(device, &memory);
      generators[device] = std::make_unique<PhiloxGenerator>(Device(kCUDA, device));
    }
  }

  DeviceType type() const override { return kCUDA; }
  int device_count() const override { return visible_devices; }
  int current_device() const override { return current_device_of_thread(); }
  void set_device(int index) const override {
    ++set_device_calls;
    current_device_of_thread() = index;
  }

  Stream default_stream(int device) const override { return Stream(Device(kCUDA, device), 0); }
  Stream current_stream(int device) const override {
    return Stream(Device(kCUDA, device), current_streams_of_thread()[static_cast<size_t>(device)]);
  }
  Stream exchange_stream(const Stream& stream) const override {
    const Stream previous = current_stream(stream.device().index());
    current_streams_of_thread()[static_cast<size_t>(stream.device().index())] = stream.id();
    return previous;
  }
  Stream create_stream(int device) const override { return Stream(Device(kCUDA, device), next_stream_id++); }
  bool query_stream(const Stream& stream) const override {
    std::lock_guard lock(mutex);
    return !busy_streams.count(stream.id());
  }
  void synchronize_stream(const Stream& stream) const override {
    std::lock_guard lock(mutex);
    ++stream_synchronizations;
    busy_streams.erase(stream.id());
  }

  void record_event(void** event, const Stream& stream, bool enable_timing) const override {
    if (!*event) {
      *event = new FakeEvent{stream.device().index(), stream.id(), 0, enable_timing};
      ++live_events;
    }
    auto* fake = static_cast<FakeEvent*>(*event);
    fake->stream = stream.id();
    fake->time_ms = clock_ms += 1.5;
  }
  void block_event(void* event, const Stream& stream) const override {
    std::lock_guard lock(mutex);
    blocks.emplace_back(static_cast<FakeEvent*>(event)->stream, stream.id());
  }
  bool query_event(void* event) const override {
    std::lock_guard lock(mutex);
    return !busy_streams.count(static_cast<FakeEvent*>(event)->stream);
  }
  void synchronize_event(void* event) const override {
    std::lock_guard lock(mutex);
    ++event_synchronizations;
    busy_streams.erase(static_cast<FakeEvent*>(event)->stream);
  }
  double elapsed_time(void* start, void* end) const override {
    return static_cast<FakeEvent*>(end)->time_ms - static_cast<FakeEvent*>(start)->time_ms;
  }
  void destroy_event(void* event, int) const noexcept override {
    delete static_cast<FakeEvent*>(event);
    --live_events;
  }

  void synchronize(int device) const override { ++device_synchronizations[static_cast<size_t>(device)]; }

  Allocator* allocator(int device) const override { return allocators[static_cast<size_t>(device)].get(); }
  Allocator* host_allocator() const override { return &fake_pinned_allocator(); }
  bool is_pinned(const void* data) const override { return fake_pinned_allocator().owns(data); }
  MemoryStats memory_stats(int device) const override { return allocators[static_cast<size_t>(device)]->stats(); }
  void empty_cache() const override {
    for (const auto& allocator : allocators) allocator->empty_cache();
  }
  Generator& default_generator(int device) const override { return *generators[static_cast<size_t>(device)]; }

  void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                  const Stream* stream, bool non_blocking) const override {
    std::lock_guard lock(mutex);
    copies.push_back(Copy{dst_device, src_device, nbytes, stream ? std::optional<Stream>(*stream) : std::nullopt,
                          non_blocking});
    std::memcpy(dst, src, nbytes);
  }

  struct Copy {
    Device dst;
    Device src;
    size_t nbytes;
    std::optional<Stream> stream;
    bool non_blocking;
  };

  void mark_busy(const Stream& stream) {
    std::lock_guard lock(mutex);
    busy_streams.insert(stream.id());
  }

  int visible_devices = kDevices;
  FakeMemoryProvider memory;
  std::array<std::unique_ptr<FakeCachingAllocator>, kDevices> allocators;
  std::array<std::unique_ptr<PhiloxGenerator>, kDevices> generators;
  mutable std::mutex mutex;
  mutable std::atomic<int64_t> next_stream_id{1};
  mutable std::set<int64_t> busy_streams;
  mutable std::vector<std::pair<int64_t, int64_t>> blocks;  // (recorded stream, blocked stream)
  mutable std::vector<Copy> copies;
  mutable std::atomic<int> set_device_calls{0};
  mutable std::atomic<int> live_events{0};
  mutable int stream_synchronizations = 0;
  mutable int event_synchronizations = 0;
  mutable std::array<std::atomic<int>, kDevices> device_synchronizations{};
  mutable double clock_ms = 0;

 private:
  static int& current_device_of_thread() {
    thread_local int current = 0;
    return current;
  }
  static std::array<int64_t, kDevices>& current_streams_of_thread() {
    thread_local std::array<int64_t, kDevices> current{};
    return current;
  }
};

// The fake device memory is host memory: a CPU tensor over the same bytes and geometry.
inline Tensor as_host(const Tensor& t) {
  return from_blob(t.data_ptr(), t.sizes(), t.strides(), TensorOptions().dtype(t.dtype()));
}

inline Tensor fake_copy_(const Tensor& self, const Tensor& src, bool non_blocking) {
  if (self.device() != src.device()) detail::copy_across_devices(self, src, non_blocking);
  else detail::copy_kernel(as_host(self), as_host(src));
  return self;
}
inline Tensor fake_clone(const Tensor& self, std::optional<MemoryFormat> memory_format) {
  const DimVector strides =
      detail::strides_for_copy(self.sizes(), self.strides(), memory_format.value_or(MemoryFormat::Preserve));
  Tensor out = detail::empty_from_meta(TensorMeta(self.sizes(), self.dtype(), self.device(), strides));
  detail::copy_kernel(as_host(out), as_host(self));
  return out;
}
// Loads the fake backend for a scope: hooks registered, CUDA kernels in a Library.
class FakeCudaBackend {
 public:
  // Stands in for the real CUDA backend, when strata was built with one, until destroyed.
  FakeCudaBackend() : replaced_(detail::exchange_device_hooks(kCUDA, &hooks)) {
    kernels.impl("copy_", &fake_copy_);
    kernels.impl("clone", &fake_clone);
  }
  ~FakeCudaBackend() {
    reset_thread_state();
    detail::exchange_device_hooks(kCUDA, replaced_);
  }
  FakeCudaBackend(const FakeCudaBackend&) = delete;
  FakeCudaBackend& operator=(const FakeCudaBackend&) = delete;

  FakeCudaHooks hooks;
  Library kernels{"strata", Library::IMPL, DispatchKey::CUDA};

 private:
  const DeviceHooks* replaced_;
  // The fake's current device and streams are thread_local: the next test starts afresh.
  void reset_thread_state() {
    hooks.set_device(0);
    for (int device = 0; device < FakeCudaHooks::kDevices; ++device)
      hooks.exchange_stream(hooks.default_stream(device));
  }
};

// Takes the real CUDA backend's hooks away for a scope (when strata was built with one), so a
// test sees what a build without CUDA sees.
class NoCudaBackend {
 public:
  NoCudaBackend() : replaced_(detail::exchange_device_hooks(kCUDA, nullptr)) {}
  ~NoCudaBackend() { detail::exchange_device_hooks(kCUDA, replaced_); }
  NoCudaBackend(const NoCudaBackend&) = delete;
  NoCudaBackend& operator=(const NoCudaBackend&) = delete;

 private:
  const DeviceHooks* replaced_;
};

}  // namespace strata::testing
