// CUDA Graphs for jit::CudaGraph: stream capture, instantiation and replay.
// See Note [CUDA graphs] in jit/cuda_graph.cpp.
#include <strata/cuda/runtime.h>

#include <memory>

#include <strata/cuda/allocator.h>
#include <strata/jit/graph_capture.h>

namespace strata::cuda::detail {
namespace {

cudaStream_t native(const Stream& stream) { return native_stream(stream.device().index(), stream.id()); }

// A capture and, once it ended, its graph: the instantiated graph and the allocator pool its
// buffers come from (Note [Capture pools] in caching_allocator.cpp).
struct Captured {
  int device;
  uint64_t pool;
  cudaGraphExec_t executable = nullptr;
};

class CudaGraphCapture final : public jit::detail::GraphCaptureBackend {
 public:
  void* begin_capture(const Stream& stream) const override {
    const int device = stream.device().index();
    DeviceScope scope(device);
    auto captured = std::make_unique<Captured>(Captured{device, begin_capture_pool(device, stream.id())});
    // Thread-local mode: other threads may keep launching; this thread may not sync meanwhile.
    const cudaError_t status = cudaStreamBeginCapture(native(stream), cudaStreamCaptureModeThreadLocal);
    if (status != cudaSuccess) {
      end_capture_pool(device, stream.id());
      release_capture_pool(device, captured->pool);
    }
    check_cuda(status, "jit::CudaGraph");
    return captured.release();
  }

  void* end_capture(void* capture, const Stream& stream) const override {
    std::unique_ptr<Captured> captured(static_cast<Captured*>(capture));
    DeviceScope scope(captured->device);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(native(stream), &graph);
    end_capture_pool(captured->device, stream.id());
    cudaError_t status = ended;
    if (status == cudaSuccess) {
      status = cudaGraphInstantiate(&captured->executable, graph, 0);
      cudaGraphDestroy(graph);
    }
    if (status != cudaSuccess) release_capture_pool(captured->device, captured->pool);
    check_cuda(status, "jit::CudaGraph");
    return captured.release();
  }

  void abort_capture(void* capture, const Stream& stream) const noexcept override {
    const std::unique_ptr<Captured> captured(static_cast<Captured*>(capture));
    DeviceScope scope(captured->device);
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(native(stream), &graph) == cudaSuccess && graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();  // the failed capture's error is the caller's exception, not the next call's
    try {
      end_capture_pool(captured->device, stream.id());
      release_capture_pool(captured->device, captured->pool);
    } catch (...) {  // the pool's blocks stay reserved: memory kept, nothing overwritten
    }
  }

  void replay(void* graph, const Stream& stream) const override {
    DeviceScope scope(stream.device().index());
    check_cuda(cudaGraphLaunch(static_cast<Captured*>(graph)->executable, native(stream)), "jit::CudaGraph::run");
  }

  void destroy(void* graph) const noexcept override {
    const std::unique_ptr<Captured> captured(static_cast<Captured*>(graph));
    cudaGraphExecDestroy(captured->executable);
    try {
      release_capture_pool(captured->device, captured->pool);
    } catch (...) {
    }
  }
};

const CudaGraphCapture capture;
[[maybe_unused]] const bool registered = [] {
  jit::detail::set_graph_capture_backend(&capture);
  return true;
}();

}  // namespace
}  // namespace strata::cuda::detail
