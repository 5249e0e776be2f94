// jit::CudaGraph: capture a traced graph's launches once, replay them with one launch.
#include <strata/jit/cuda_graph.h>

#include <atomic>

#include <strata/autograd/grad_mode.h>
#include <strata/jit/graph_capture.h>
#include <strata/tensor/event.h>

namespace strata::jit {

// Note [CUDA graphs]
// A launch-bound model (many small kernels) spends its time in the host's launch calls. A CUDA
// graph records the launches of one run and replays them all with one call. CudaGraph:
// - runs the graph once on its own stream (warming up what initialises lazily: cuBLAS handles,
//   kernel modules);
// - records a second run on the same stream (cudaStreamBeginCapture), keeping every tensor, its
//   inputs' copies and its outputs alive for the CudaGraph's life. The capture allocates from a
//   private pool of the caching allocator (Note [Capture pools] in cuda/caching_allocator.cpp):
//   a replay writes into exactly the buffers of the captured run, the scratch memory ops freed
//   inside it included, so none of them may be handed to anyone else while the graph lives;
// - replays by copying new inputs into the captured input buffers, launching the graph, and
//   copying the outputs out, all on its stream, ordered after the caller's current stream's
//   work and before anything the caller queues next.
// Ops that wait for the device (item(), a host copy) cannot be captured: the capture fails and
// CudaGraph throws, leaving the stream usable. The graph runs without grad.

namespace detail {
namespace {
std::atomic<const GraphCaptureBackend*> capture_backend{nullptr};
}
const GraphCaptureBackend* graph_capture_backend() { return capture_backend.load(std::memory_order_acquire); }
void set_graph_capture_backend(const GraphCaptureBackend* backend) {
  capture_backend.store(backend, std::memory_order_release);
}
}  // namespace detail

struct CudaGraph::State {
  Graph graph;
  Stream stream{Device(kCPU), 0};
  const detail::GraphCaptureBackend* backend = nullptr;
  void* executable = nullptr;
  tensor_list inputs;    // the captured input buffers
  tensor_list outputs;   // the captured output buffers
  tensor_list kept;      // every buffer the captured launches touch

  ~State() {
    if (executable != nullptr) backend->destroy(executable);
  }
};

namespace {

void check_capture_inputs(const tensor_list& inputs, const detail::GraphCaptureBackend* backend) {
  STRATA_CHECK_VALUE(!inputs.empty(), "[jit::CudaGraph] needs at least one input (a CUDA tensor)");
  for (size_t i = 0; i < inputs.size(); ++i) {
    STRATA_CHECK_VALUE(inputs[i].defined(), "[jit::CudaGraph] example input ", i, " is an undefined tensor");
    STRATA_CHECK_VALUE(inputs[i].device().is_cuda(), "[jit::CudaGraph] example input ", i, " is on ",
                       inputs[i].device(), "; CUDA graphs capture CUDA work: move the inputs with to(kCUDA)");
    STRATA_CHECK_VALUE(inputs[i].device() == inputs[0].device(), "[jit::CudaGraph] example input ", i, " is on ",
                       inputs[i].device(), " but input 0 is on ", inputs[0].device());
  }
  STRATA_CHECK(backend != nullptr, "[jit::CudaGraph] this strata has no CUDA graph capture (built without the CUDA "
               "backend)");
}

tensor_list copies_of(const tensor_list& tensors) {
  tensor_list copies;
  for (const Tensor& tensor : tensors) copies.push_back(tensor.detach().clone());
  return copies;
}

}  // namespace

CudaGraph::CudaGraph(Graph graph, const tensor_list& example_inputs) : state_(std::make_unique<State>()) {
  const detail::GraphCaptureBackend* backend = detail::graph_capture_backend();
  check_capture_inputs(example_inputs, backend);
  State& state = *state_;
  state.graph = std::move(graph);
  state.backend = backend;
  state.stream = Stream::create(example_inputs[0].device());
  NoGradGuard no_grad;
  Event inputs_ready;
  inputs_ready.record(Stream::current_stream(example_inputs[0].device()));
  inputs_ready.block(state.stream);
  StreamGuard on_capture_stream(state.stream);
  {
    tensor_list warm_up_kept;  // freed together at the end: the allocator keeps their blocks
    detail::run_graph(state.graph, copies_of(example_inputs), &warm_up_kept);
  }
  state.inputs = copies_of(example_inputs);
  state.stream.synchronize();
  void* capture = backend->begin_capture(state.stream);
  try {
    state.outputs = detail::run_graph(state.graph, state.inputs, &state.kept);
  } catch (...) {
    backend->abort_capture(capture, state.stream);
    throw;
  }
  state.executable = backend->end_capture(capture, state.stream);
}

CudaGraph::~CudaGraph() = default;
CudaGraph::CudaGraph(CudaGraph&&) noexcept = default;
CudaGraph& CudaGraph::operator=(CudaGraph&&) noexcept = default;

tensor_list CudaGraph::run(const tensor_list& inputs) const {
  STRATA_CHECK_VALUE(state_ != nullptr, "[jit::CudaGraph::run] the CudaGraph was moved from");
  const State& state = *state_;
  STRATA_CHECK_VALUE(inputs.size() == state.inputs.size(), "[jit::CudaGraph::run] expected ", state.inputs.size(),
                     " inputs as captured, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& captured = state.inputs[i];
    STRATA_CHECK_VALUE(inputs[i].defined() && inputs[i].dtype() == captured.dtype() &&
                           inputs[i].sizes() == captured.sizes() && inputs[i].device() == captured.device(),
                       "[jit::CudaGraph::run] input ", i, " must be a ", captured.dtype(), " tensor of shape ",
                       captured.sizes(), " on ", captured.device(), " as captured");
  }
  const Stream caller = Stream::current_stream(state.stream.device());
  Event inputs_ready;
  inputs_ready.record(caller);
  inputs_ready.block(state.stream);
  tensor_list outputs;
  {
    StreamGuard on_capture_stream(state.stream);
    NoGradGuard no_grad;
    for (size_t i = 0; i < inputs.size(); ++i) state.inputs[i].copy_(inputs[i]);
    state.backend->replay(state.executable, state.stream);
    outputs = copies_of(state.outputs);
  }
  Event done;
  done.record(state.stream);
  done.block(caller);
  for (const Tensor& input : inputs) input.record_stream(state.stream);
  for (const Tensor& output : outputs) output.record_stream(caller);
  return outputs;
}

}  // namespace strata::jit
