// bench_dist: collectives and data-parallel training steps, run as the ranks of one MPI job.
//   mpirun -np 2 ./build/bench/bench_dist     (and -np 1 for the single-process step time)
// Rank 0 prints. Every benchmark has a fixed iteration count: all ranks must run the same
// collectives in the same order, which Google Benchmark's adaptive counts would not ensure.
//   strata_all_reduce/<bytes>  dist::all_reduce (the dist::all_reduce_ op, MPI_Iallreduce and
//                              the polling wait with its deadline) on a float32 tensor
//   mpi_all_reduce/<bytes>     MPI_Allreduce in place on the same kind of buffer: the reference
//   mpi_iallreduce/<bytes>     MPI_Iallreduce + MPI_Wait: what strata's path costs MPI itself
//   ddp_mlp_step               one Adam step of the 784-256-10 MLP, batch 64 per rank, with
//                              DistributedDataParallel (one gradient bucket)
//   local_mlp_step             the same step without DDP or communication: the reference
// OpenMP threads are split between the ranks (cores / ranks each).
#include <mpi.h>

#include <algorithm>
#include <thread>

#include <strata/strata.h>

#include "bench_util.h"

using namespace strata;

namespace {

int iterations_for(int64_t bytes) { return bytes >= (8 << 20) ? 30 : bytes >= (256 << 10) ? 300 : 3000; }

void strata_all_reduce(benchmark::State& state) {
  Tensor t = zeros({state.range(0) / 4});
  dist::barrier();
  for (auto _ : state) dist::all_reduce(t);
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void mpi_all_reduce(benchmark::State& state) {
  Tensor t = zeros({state.range(0) / 4});
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto _ : state)
    MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// MPI's non-blocking all-reduce, which strata's waits need (Note [Waiting with a deadline]).
void mpi_iallreduce(benchmark::State& state) {
  Tensor t = zeros({state.range(0) / 4});
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto _ : state) {
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

struct MlpStep {
  nn::Sequential net = nn::Sequential(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  Tensor x = randn({64, 784});
  Tensor y = randint(0, 10, {64});
};

void ddp_mlp_step(benchmark::State& state) {
  MlpStep step;
  auto ddp = dist::DistributedDataParallel(step.net);
  optim::Adam adam(step.net.parameters(), optim::AdamOptions(1e-3));
  dist::barrier();
  for (auto _ : state) {
    adam.zero_grad();
    cross_entropy(ddp.forward(step.x), step.y).backward();
    adam.step();
  }
  state.counters["ranks"] = dist::world_size();
  state.SetItemsProcessed(state.iterations() * 64 * dist::world_size());  // examples over all ranks
}

void local_mlp_step(benchmark::State& state) {
  MlpStep step;
  optim::Adam adam(step.net.parameters(), optim::AdamOptions(1e-3));
  dist::barrier();
  for (auto _ : state) {
    adam.zero_grad();
    cross_entropy(step.net.forward(step.x), step.y).backward();
    adam.step();
  }
  state.SetItemsProcessed(state.iterations() * 64);
}

class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  dist::init();
  set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / dist::world_size()));
  std::vector<std::pair<std::string, std::string>> pairs{{"local_mlp_step/iterations:300", "ddp_mlp_step/iterations:300"}};
  for (int64_t bytes : {int64_t{4} << 10, int64_t{256} << 10, int64_t{4} << 20, int64_t{32} << 20}) {
    const std::string suffix = "/" + std::to_string(bytes) + "/iterations:" + std::to_string(iterations_for(bytes));
    benchmark::RegisterBenchmark("strata_all_reduce", strata_all_reduce)->Arg(bytes)->Iterations(iterations_for(bytes));
    benchmark::RegisterBenchmark("mpi_all_reduce", mpi_all_reduce)->Arg(bytes)->Iterations(iterations_for(bytes));
    benchmark::RegisterBenchmark("mpi_iallreduce", mpi_iallreduce)->Arg(bytes)->Iterations(iterations_for(bytes));
    pairs.emplace_back("strata_all_reduce" + suffix, "mpi_all_reduce" + suffix);
    pairs.emplace_back("mpi_iallreduce" + suffix, "mpi_all_reduce" + suffix);
  }
  benchmark::RegisterBenchmark("ddp_mlp_step", ddp_mlp_step)->Iterations(300)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("local_mlp_step", local_mlp_step)->Iterations(300)->Unit(benchmark::kMicrosecond);
  if (dist::rank() == 0) return strata::bench::run_with_ratios(argc, argv, pairs);
  benchmark::Initialize(&argc, argv);
  SilentReporter silent;
  benchmark::RunSpecifiedBenchmarks(&silent);
  benchmark::Shutdown();
  return 0;
}
