#pragma once
// Internal: how jit::CudaGraph reaches a backend's graph capture (CUDA Graphs), which lives in
// the CUDA backend library and registers itself when that library loads.
#include <strata/tensor/stream.h>

namespace strata::jit::detail {

class GraphCaptureBackend {
 public:
  virtual ~GraphCaptureBackend() = default;
  // Starts recording the launches queued on `stream` (by this thread) instead of running them;
  // returns the capture, which end_capture or abort_capture takes. Memory allocated on `stream`
  // meanwhile is the graph's alone until it is destroyed (Note [Capture pools] in
  // cuda/caching_allocator.cpp).
  virtual void* begin_capture(const Stream& stream) const = 0;
  // Ends the recording and returns the instantiated, replayable graph.
  virtual void* end_capture(void* capture, const Stream& stream) const = 0;
  // Ends a recording that failed, dropping what was recorded; never throws.
  virtual void abort_capture(void* capture, const Stream& stream) const noexcept = 0;
  // Queues one replay of `graph` on `stream`.
  virtual void replay(void* graph, const Stream& stream) const = 0;
  // The graph is gone: its memory goes back to the allocator.
  virtual void destroy(void* graph) const noexcept = 0;
};

// Null until a backend registers (CPU-only builds, or before the CUDA library loads).
const GraphCaptureBackend* graph_capture_backend();
void set_graph_capture_backend(const GraphCaptureBackend* backend);

}  // namespace strata::jit::detail
