// train_fashion_mnist: the flagship sample. Trains a classifier on Fashion-MNIST (60,000
// 28x28 grey images of clothes in 10 classes; 10,000 more for testing) with a C++ training
// loop that reads like PyTorch's, then reports test accuracy and time per epoch.
//
//   ./build/samples/train_fashion_mnist                 # MLP, 5 epochs (what ./setup.sh runs)
//   ./build/samples/train_fashion_mnist --model cnn --epochs 2
//   ./build/samples/train_fashion_mnist --device cuda   # on the GPU, the same loop
//   mpirun -np 2 ./build/samples/train_fashion_mnist --ddp   # data-parallel, one process per rank
//   ./build/samples/train_fashion_mnist --help
//
// What it shows:
//   1. Data: the IDX files from Debian's dataset-fashion-mnist package (gzip-compressed) read
//      into tensors, a TensorDataset and a shuffling DataLoader (reproducible: manual_seed).
//   2. Models: an MLP (784-256-10) or a small CNN (two conv + max-pool blocks, then a linear
//      layer), built from nn modules; training with Adam and a cosine learning-rate schedule.
//   3. A progress bar per epoch (loss, accuracy, examples/s, ETA; plain lines when the output
//      is not a terminal), evaluation without gradients, and a loss curve written as CSV and
//      drawn as SVG.
//   4. The same loop on a GPU with --device cuda: the model moves with model.to(kCUDA) before
//      the optimizer is built, and each batch with to(device).
//   5. A checkpoint (model and optimizer state, safetensors) written after training, loaded
//      into a fresh model that must score the same.
//   6. Data-parallel training with --ddp under mpirun (builds with MPI only): each rank trains
//      a replica on its own shard (data::DistributedSampler, reshuffled per epoch with
//      set_epoch), dist::DistributedDataParallel averages the gradients during backward, and
//      rank 0 alone prints, evaluates and writes the checkpoint.
#include <strata/strata.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <functional>
#include <optional>
#include <string>
#include <thread>

using namespace strata;

namespace {

struct Settings {
  std::string model = "mlp";
  int epochs = 5;
  int64_t batch_size = 64;
  double lr = 1e-3;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string out_dir = "fashion_mnist_out";
  uint64_t seed = 0;
  std::string device = "cpu";
  bool ddp = false;
};

void usage(const char* program) {
  std::printf(
      "usage: %s [--model mlp|cnn] [--epochs N] [--batch-size N] [--lr X] [--data DIR] [--out DIR] [--seed N]\n"
      "          [--device cpu|cuda] [--ddp]\n"
      "  defaults: --model mlp --epochs 5 --batch-size 64 --lr 0.001\n"
      "            --data /usr/share/datasets/fashion-mnist (Debian package dataset-fashion-mnist)\n"
      "            --out fashion_mnist_out (loss curve CSV/SVG and the checkpoint)\n"
      "  --ddp: data-parallel over MPI, e.g. mpirun -np 2 %s --ddp (--batch-size is per rank;\n"
      "         with --device cuda each rank takes the GPU numbered by its rank on the node)\n",
      program, program);
}

Settings parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      usage(argv[0]);
      std::exit(0);
    }
    if (flag == "--ddp") {
      settings.ddp = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s needs a value\n", argv[0], flag.c_str());
      std::exit(2);
    }
    const std::string value = argv[++i];
    if (flag == "--model") settings.model = value;
    else if (flag == "--epochs") settings.epochs = std::stoi(value);
    else if (flag == "--batch-size") settings.batch_size = std::stoll(value);
    else if (flag == "--lr") settings.lr = std::stod(value);
    else if (flag == "--data") settings.data_dir = value;
    else if (flag == "--out") settings.out_dir = value;
    else if (flag == "--seed") settings.seed = std::stoull(value);
    else if (flag == "--device") settings.device = value;
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", argv[0], flag.c_str());
      usage(argv[0]);
      std::exit(2);
    }
  }
  if (settings.model != "mlp" && settings.model != "cnn") {
    std::fprintf(stderr, "%s: --model must be mlp or cnn, got %s\n", argv[0], settings.model.c_str());
    std::exit(2);
  }
  if (settings.device != "cpu" && settings.device != "cuda") {
    std::fprintf(stderr, "%s: --device must be cpu or cuda, got %s\n", argv[0], settings.device.c_str());
    std::exit(2);
  }
  return settings;
}

nn::Sequential make_model(const std::string& kind) {
  if (kind == "mlp")
    return nn::Sequential(nn::Flatten(), nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  return nn::Sequential(nn::Conv2d(1, 16, 3, /*stride=*/1, /*padding=*/1), nn::ReLU(), nn::MaxPool2d(2),  // 16x14x14
                        nn::Conv2d(16, 32, 3, /*stride=*/1, /*padding=*/1), nn::ReLU(), nn::MaxPool2d(2),  // 32x7x7
                        nn::Flatten(), nn::Linear(32 * 7 * 7, 10));
}

// Accuracy of `model` on (images, labels), in batches, without recording gradients.
double evaluate(nn::Sequential& model, const Tensor& images, const Tensor& labels, Device device) {
  NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0;
  for (int64_t begin = 0; begin < images.size(0); begin += 1000) {
    const int64_t end = std::min<int64_t>(begin + 1000, images.size(0));
    Tensor predicted = argmax(model.forward(images.slice(0, begin, end).to(device)), 1);
    correct += eq(predicted, labels.slice(0, begin, end).to(device)).sum().item<int64_t>();
  }
  model.train();
  return static_cast<double>(correct) / static_cast<double>(images.size(0));
}

int run(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  manual_seed(settings.seed);
  int world_size = 1;
  bool lead = true;  // rank 0 prints, evaluates and writes files
  if (settings.ddp) {
#ifdef STRATA_WITH_DIST
    dist::init();
    world_size = dist::world_size();
    lead = dist::rank() == 0;
    set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / world_size));
#else
    std::fprintf(stderr, "--ddp: this build has no MPI (install libopenmpi-dev and rebuild)\n");
    return 2;
#endif
  }
  if (!lead) std::cout.setstate(std::ios::badbit);  // the other ranks train quietly
  if (lead) std::filesystem::create_directories(settings.out_dir);

  data::Example train_set = data::load_mnist(settings.data_dir, /*train=*/true);
  data::Example test_set = data::load_mnist(settings.data_dir, /*train=*/false);
  if (lead) std::printf("Fashion-MNIST: %lld training and %lld test images from %s\n",
              static_cast<long long>(train_set.data.size(0)), static_cast<long long>(test_set.data.size(0)),
              settings.data_dir.c_str());

  Device device(kCPU);
  if (settings.device == "cuda") {
    if (!cuda::is_available()) {
      try {
        (void)cuda::current_device();  // throws, saying why there is no GPU
      } catch (const Error& error) {
        std::fprintf(stderr, "--device cuda: %s\n", error.what());
      }
      return 2;
    }
#ifdef STRATA_WITH_DIST
    // One GPU per rank: NCCL refuses two ranks on one device. After this, a bare kCUDA in this
    // process means the rank's own GPU.
    if (settings.ddp) cuda::set_device(dist::local_rank());
#endif
    device = Device(kCUDA, cuda::current_device());
  }
  nn::Sequential model = make_model(settings.model);
  model.to(device);  // before the optimizer takes the parameters
  int64_t parameter_count = 0;
  for (const Tensor& p : model.parameters()) parameter_count += p.numel();
  std::cout << "model (" << parameter_count << " parameters):\n" << model << "\n";

  if (settings.ddp) std::cout << "data-parallel over " << world_size << " ranks, batch " << settings.batch_size
                              << " per rank\n";
  std::function<Tensor(const Tensor&)> forward = [&](const Tensor& x) { return model.forward(x); };
  data::TensorDataset dataset(train_set.data, train_set.target);
  data::DataLoader loader(dataset, settings.batch_size, /*shuffle=*/true, /*drop_last=*/false);
#ifdef STRATA_WITH_DIST
  std::optional<data::DistributedSampler> sampler;
  std::optional<dist::DistributedDataParallel<nn::Sequential>> ddp;
  if (settings.ddp) {
    sampler.emplace(dataset.size(), std::nullopt, std::nullopt, /*shuffle=*/true, settings.seed);
    loader = data::DataLoader(dataset, settings.batch_size, *sampler);
    ddp.emplace(model);  // every rank starts from rank 0's parameters
    forward = [&](const Tensor& x) { return ddp->forward(x); };
  }
#endif
  optim::Adam adam(model.parameters(), optim::AdamOptions(settings.lr));
  optim::CosineAnnealingLR schedule(adam, settings.epochs);
  LossCurve curve;

  int64_t step = 0;
  double seconds_total = 0;
  for (int epoch = 1; epoch <= settings.epochs; ++epoch) {
#ifdef STRATA_WITH_DIST
    if (sampler) sampler->set_epoch(epoch);
#endif
    ProgressBar progress(static_cast<int64_t>(loader.size()),
                         "epoch " + std::to_string(epoch) + "/" + std::to_string(settings.epochs),
                         {.out = &std::cout, .examples_per_step = settings.batch_size * world_size});
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0, correct = 0, seen = 0, recent_loss = 0;
    int64_t recent_steps = 0;
    for (auto& [host_images, host_labels] : loader) {
      const Tensor images = host_images.to(device), labels = host_labels.to(device);
      Tensor logits = forward(images);
      Tensor loss = cross_entropy(logits, labels);
      adam.zero_grad();
      loss.backward();
      adam.step();

      const double batch = static_cast<double>(images.size(0));
      const double loss_value = loss.item<double>();
      loss_sum += loss_value * batch;
      correct += eq(argmax(logits, 1), labels).sum().item<double>();
      seen += batch;
      recent_loss += loss_value;
      ++step;
      if (++recent_steps == 50) {  // the curve gets the mean of every 50 steps
        curve.record(step, epoch, recent_loss / 50);
        recent_loss = 0;
        recent_steps = 0;
      }
      progress.update(1, {{"loss", loss_sum / seen}, {"acc", correct / seen}});
    }
    progress.finish();
    schedule.step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds_total += seconds;
    if (!lead) continue;
    const double test_accuracy = evaluate(model, test_set.data, test_set.target, device);
    curve.record(step, epoch, loss_sum / seen, test_accuracy);
    std::printf("epoch %d: train loss %.4f, train accuracy %.2f%%, test accuracy %.2f%%, %.1f s (%.0f images/s)\n",
                epoch, loss_sum / seen, 100 * correct / seen, 100 * test_accuracy, seconds, seen * world_size / seconds);
  }

  if (!lead) return 0;
  const std::string csv = settings.out_dir + "/loss_curve.csv", svg = settings.out_dir + "/loss_curve.svg";
  curve.write_csv(csv);
  curve.write_svg(svg, "Fashion-MNIST, " + settings.model + ": training loss and test accuracy");
  const std::string model_path = settings.out_dir + "/" + settings.model + ".safetensors";
  const std::string optimizer_path = settings.out_dir + "/" + settings.model + "_adam.safetensors";
  nn::save(model, model_path);
  optim::save(adam, optimizer_path);

  // The checkpoint must reproduce the trained model exactly.
  nn::Sequential restored = make_model(settings.model);
  nn::load(restored, model_path);
  restored.to(device);
  const double final_accuracy = evaluate(model, test_set.data, test_set.target, device);
  const double restored_accuracy = evaluate(restored, test_set.data, test_set.target, device);

  std::printf("\nloss curve: %s and %s\ncheckpoint: %s (+ optimizer state in %s)\n", csv.c_str(), svg.c_str(),
              model_path.c_str(), optimizer_path.c_str());
  std::printf("restored from the checkpoint: test accuracy %.2f%% (%s)\n", 100 * restored_accuracy,
              restored_accuracy == final_accuracy ? "identical" : "DIFFERENT");
  std::printf("%s on %s, %d epochs, %.1f s per epoch on average: TEST ACCURACY %.2f%%\n", settings.model.c_str(),
              device.str().c_str(), settings.epochs, seconds_total / settings.epochs, 100 * final_accuracy);
  return restored_accuracy == final_accuracy ? 0 : 1;
}

}  // namespace

// Errors (a missing data folder, a rank without its GPU, ...) end the run with their message
// and exit status 1, not an abort.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    return 1;
  }
}
