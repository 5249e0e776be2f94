// The process group: MPI start-up and shutdown, rank and world size, the deadline on every
// wait, and the table of collectives in flight that Work handles refer to.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include <strata/autograd/grad_mode.h>
#include <strata/dist/mpi_runtime.h>
#include <strata/tensor/half.h>

namespace strata::dist {
namespace detail {
namespace {

struct ProcessGroup {
  bool initialized = false;
  bool owns_mpi = false;  // we called MPI_Init, so we finalize
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Op half_ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};      // sum, max, min
  MPI_Op bfloat16_ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum, max, min
  std::atomic<int64_t> timeout_ms{300'000};
  std::mutex work_mutex;
  int64_t next_work_id = 1;
  std::unordered_map<int64_t, PendingWork> works;
  std::deque<PendingWork> abandoned;  // timed out: MPI may still write their buffers
};

ProcessGroup& group() {
  static ProcessGroup* instance = new ProcessGroup();  // never destroyed: used from atexit
  return *instance;
}

std::mutex& mpi_mutex() {
  static std::mutex* instance = new std::mutex();
  return *instance;
}

// MPI has no 16-bit floating types: Half and BFloat16 travel as 16-bit words and reduce with
// these user-defined operations, which compute in float as ATen's CPU kernels do.
template <class T, int Kind>
void reduce_16bit(void* in, void* inout, int* length, MPI_Datatype*) {
  const T* source = static_cast<const T*>(in);
  T* target = static_cast<T*>(inout);
  for (int i = 0; i < *length; ++i) {
    float a = source[i], b = target[i];
    target[i] = T(Kind == 0 ? a + b : Kind == 1 ? std::max(a, b) : std::min(a, b));
  }
}

void create_16bit_ops(ProcessGroup& g) {
  MPI_Op_create(&reduce_16bit<Half, 0>, 1, &g.half_ops[0]);
  MPI_Op_create(&reduce_16bit<Half, 1>, 1, &g.half_ops[1]);
  MPI_Op_create(&reduce_16bit<Half, 2>, 1, &g.half_ops[2]);
  MPI_Op_create(&reduce_16bit<BFloat16, 0>, 1, &g.bfloat16_ops[0]);
  MPI_Op_create(&reduce_16bit<BFloat16, 1>, 1, &g.bfloat16_ops[1]);
  MPI_Op_create(&reduce_16bit<BFloat16, 2>, 1, &g.bfloat16_ops[2]);
}

void finalize_at_exit() {
  ProcessGroup& g = group();
  if (!g.initialized) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Op* op : {&g.half_ops[0], &g.half_ops[1], &g.half_ops[2], &g.bfloat16_ops[0], &g.bfloat16_ops[1],
                     &g.bfloat16_ops[2]})
    if (*op != MPI_OP_NULL) MPI_Op_free(op);
  // Work abandoned after a timeout may never complete: finalizing would wait for it.
  bool all_done = true;
  for (PendingWork& work : g.abandoned) {
    int done = 0;
    MPI_Test(&work.request, &done, MPI_STATUS_IGNORE);
    all_done = all_done && done;
  }
  if (g.owns_mpi && all_done) {
    MPI_Comm_free(&g.comm);
    MPI_Finalize();
  }
}

int local_rank_of(MPI_Comm comm) {
  // Launchers say it (Open MPI, MPICH's Hydra, Slurm); else count the ranks on this machine.
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}

}  // namespace

void check_initialized(const char* op) {
  STRATA_CHECK(group().initialized, "[", op, "] dist::init() has not been called (start the program with mpirun "
               "and call dist::init() first)");
}

void check_mpi(int code, const char* op) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  strata::detail::throw_error<Error>("[", op, "] MPI error on rank ", group().rank, ": ", std::string(text, length));
}

MPI_Comm communicator() { return group().comm; }

std::unique_lock<std::mutex> lock_mpi() { return std::unique_lock<std::mutex>(mpi_mutex()); }

MPI_Datatype mpi_datatype(ScalarType dtype, const char* op) {
  switch (dtype) {
    case kBool: return MPI_C_BOOL;
    case kUInt8: return MPI_UINT8_T;
    case kInt8: return MPI_INT8_T;
    case kInt16: return MPI_INT16_T;
    case kInt32: return MPI_INT32_T;
    case kInt64: return MPI_INT64_T;
    case kFloat16:
    case kBFloat16: return MPI_UINT16_T;  // reduced by the ops of create_16bit_ops
    case kFloat32: return MPI_FLOAT;
    case kFloat64: return MPI_DOUBLE;
  }
  strata::detail::throw_error<TypeError>("[", op, "] unsupported dtype ", dtype);
}

MPI_Op mpi_reduce_op(ReduceOp reduce, ScalarType dtype, const char* op) {
  const int kind = reduce == ReduceOp::Max ? 1 : reduce == ReduceOp::Min ? 2 : 0;  // Mean sums, then divides
  if (dtype == kFloat16) return group().half_ops[kind];
  if (dtype == kBFloat16) return group().bfloat16_ops[kind];
  if (dtype == kBool) return kind == 2 ? MPI_LAND : MPI_LOR;  // sum and max of bools: any
  (void)op;
  return kind == 0 ? MPI_SUM : kind == 1 ? MPI_MAX : MPI_MIN;
}

// Note [Waiting with a deadline]
// MPI_Wait blocks for ever when a peer died or never calls the matching collective (Open MPI
// without fault tolerance does not notice a dead peer on its shared-memory transport). Every
// collective is therefore started non-blocking and finished here by polling MPI_Test, which
// also drives MPI's progress, until it completes or timeout() passes; then strata::Error
// names the op and the rank. The communicator returns errors (MPI_ERRORS_RETURN) rather than
// aborting, so MPI's own failures become strata::Error too. Polling spins, as MPI_Wait does
// (yielding at once costs the rest of the time slice on a busy machine: half the bandwidth);
// after 20 ms it yields the core between polls, so ranks that share cores still progress.
void wait_request(MPI_Request& request, const char* op) {
  const auto start = std::chrono::steady_clock::now();
  const auto limit = dist::timeout();
  for (int spins = 0;; ++spins) {
    int done = 0;
    {
      auto lock = lock_mpi();
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), op);
    }
    if (done) return;
    if (spins % 64 == 63) {
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited > limit)
        strata::detail::throw_error<Error>("[", op, "] rank ", group().rank, " timed out after ", limit.count(),
                                           " ms waiting for the other ranks: a rank died, or did not call the "
                                           "same collective (set dist::set_timeout or STRATA_DIST_TIMEOUT)");
      if (waited > std::chrono::milliseconds(20)) std::this_thread::yield();  // a long wait: share the core
    }
  }
}

namespace {
void complete(PendingWork& work) {
  try {
    wait_request(work.request, work.op);
  } catch (...) {
    std::lock_guard lock(group().work_mutex);
    group().abandoned.push_back(std::move(work));
    throw;
  }
  if (work.on_complete) {
    NoGradGuard no_grad;
    work.on_complete();
  }
}
}  // namespace

int64_t finish_or_enqueue(PendingWork work, bool async_op) {
  if (!async_op) {
    complete(work);
    return 0;
  }
  ProcessGroup& g = group();
  std::lock_guard lock(g.work_mutex);
  const int64_t id = g.next_work_id++;
  g.works.emplace(id, std::move(work));
  return id;
}

}  // namespace detail

// Note [Ring all-reduce]
// Every collective runs non-blocking (Note [Waiting with a deadline]). Open MPI's MPI_Iallreduce
// (its libnbc component) picks binomial or recursive-doubling algorithms that move large
// buffers at about half the bandwidth of the blocking MPI_Allreduce; its ring algorithm matches
// it (bench/bench_dist.cpp measures both). init() asks for the ring unless the environment
// already chooses (OMPI_MCA_coll_libnbc_iallreduce_algorithm); other MPIs ignore the variable.
void init() {
  detail::ProcessGroup& g = detail::group();
  if (g.initialized) return;
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    // See Note [Ring all-reduce]; a value the user set wins.
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
    int provided = 0;
    detail::check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "dist::init");
    g.owns_mpi = true;
  }
  detail::check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &g.comm), "dist::init");
  MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(g.comm, &g.rank);
  MPI_Comm_size(g.comm, &g.world_size);
  g.local_rank = detail::local_rank_of(g.comm);
  detail::create_16bit_ops(g);
  if (const char* seconds = std::getenv("STRATA_DIST_TIMEOUT"))
    g.timeout_ms = static_cast<int64_t>(std::atof(seconds) * 1000);
  g.initialized = true;
  std::atexit(&detail::finalize_at_exit);
}

bool is_initialized() { return detail::group().initialized; }

int rank() {
  detail::check_initialized("dist::rank");
  return detail::group().rank;
}

int world_size() {
  detail::check_initialized("dist::world_size");
  return detail::group().world_size;
}

int local_rank() {
  detail::check_initialized("dist::local_rank");
  return detail::group().local_rank;
}

void barrier() {
  detail::check_initialized("dist::barrier");
  MPI_Request request;
  {
    auto lock = detail::lock_mpi();
    detail::check_mpi(MPI_Ibarrier(detail::communicator(), &request), "dist::barrier");
  }
  detail::wait_request(request, "dist::barrier");
}

void set_timeout(std::chrono::milliseconds timeout) {
  STRATA_CHECK_VALUE(timeout.count() > 0, "[dist::set_timeout] the timeout must be positive, got ", timeout.count(),
                     " ms");
  detail::group().timeout_ms = timeout.count();
}

std::chrono::milliseconds timeout() { return std::chrono::milliseconds(detail::group().timeout_ms.load()); }

void Work::wait() {
  if (id_ == 0) return;
  detail::ProcessGroup& g = detail::group();
  detail::PendingWork work;
  {
    std::lock_guard lock(g.work_mutex);
    auto found = g.works.find(id_);
    id_ = 0;
    if (found == g.works.end()) return;  // another handle on the same work waited already
    work = std::move(found->second);
    g.works.erase(found);
  }
  detail::complete(work);
}

bool Work::is_completed() {
  if (id_ == 0) return true;
  detail::ProcessGroup& g = detail::group();
  MPI_Request* request = nullptr;
  {
    std::lock_guard lock(g.work_mutex);
    auto found = g.works.find(id_);
    if (found == g.works.end()) return true;
    request = &found->second.request;
  }
  int done = 0;
  {
    auto lock = detail::lock_mpi();
    detail::check_mpi(MPI_Test(request, &done, MPI_STATUS_IGNORE), "dist::Work::is_completed");
  }
  if (done) wait();  // runs on_complete (copies, Mean's division)
  return done != 0;
}

}  // namespace strata::dist
