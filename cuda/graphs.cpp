// CUDA Graphs for jit::CudaGraph: stream capture, instantiation and replay.
// See Note [CUDA graphs] in jit/cuda_graph.cpp.
#include <strata/cuda/runtime.h>

#include <strata/jit/graph_capture.h>

namespace strata::cuda::detail {
namespace {

cudaStream_t native(const Stream& stream) { return native_stream(stream.device().index(), stream.id()); }

class CudaGraphCapture final : public jit::detail::GraphCaptureBackend {
 public:
  void begin_capture(const Stream& stream) const override {
    DeviceScope scope(stream.device().index());
    // Thread-local mode: other threads may keep launching; this thread may not sync meanwhile.
    check_cuda(cudaStreamBeginCapture(native(stream), cudaStreamCaptureModeThreadLocal), "jit::CudaGraph");
  }

  void* end_capture(const Stream& stream) const override {
    DeviceScope scope(stream.device().index());
    cudaGraph_t graph = nullptr;
    check_cuda(cudaStreamEndCapture(native(stream), &graph), "jit::CudaGraph");
    cudaGraphExec_t executable = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&executable, graph, 0);
    cudaGraphDestroy(graph);
    check_cuda(status, "jit::CudaGraph");
    return executable;
  }

  void abort_capture(const Stream& stream) const noexcept override {
    DeviceScope scope(stream.device().index());
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(native(stream), &graph) == cudaSuccess && graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();  // the failed capture's error is the caller's exception, not the next call's
  }

  void replay(void* executable, const Stream& stream) const override {
    DeviceScope scope(stream.device().index());
    check_cuda(cudaGraphLaunch(static_cast<cudaGraphExec_t>(executable), native(stream)), "jit::CudaGraph::run");
  }

  void destroy(void* executable) const noexcept override {
    cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(executable));
  }
};

const CudaGraphCapture capture;
[[maybe_unused]] const bool registered = [] {
  jit::detail::set_graph_capture_backend(&capture);
  return true;
}();

}  // namespace
}  // namespace strata::cuda::detail
