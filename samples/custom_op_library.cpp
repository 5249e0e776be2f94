// custom_op_library: load an op library built as its own .so at run time, train a model with
// its op, and unload it again.
//
//   ./build/samples/custom_op_library [path/to/libstrata_sample_swish_ops.so]
//
// What it shows:
//   1. samples/op_library/swish_ops.cpp holds only STRATA_LIBRARY blocks: `myops::swish` with
//      CPU, Meta and Autograd kernels. CMake builds it as a MODULE library.
//   2. load_library() opens it; the op is then found by name and called through a typed handle
//      (one table lookup per call), on real tensors and on Meta tensors.
//   3. A two-layer network with swish as its activation trains on the digits data set (8x8
//      handwritten digits, 1,797 images), gradients flowing through the library's derivative.
//   4. Destroying the LibraryHandle unregisters the op and closes the .so: the name is gone.
#include <strata/strata.h>

#include <cstdio>
#include <iostream>

using namespace strata;

int main(int argc, char** argv) {
  const std::string library_path = argc > 1 ? argv[1] : STRATA_SAMPLE_OP_LIBRARY;
  manual_seed(0);
  data::Example digits = data::load_digits(STRATA_SAMPLE_DATA_DIR "/digits.csv.gz");
  const int64_t train_count = 1400;
  Tensor train_x = digits.data.slice(0, 0, train_count), train_y = digits.target.slice(0, 0, train_count);
  Tensor test_x = digits.data.slice(0, train_count, digits.data.size(0));
  Tensor test_y = digits.target.slice(0, train_count, digits.target.size(0));
  {
    LibraryHandle library = load_library(library_path);
    std::cout << "loaded " << library_path << "\n" << dump_dispatch_table("myops::swish") << "\n";
    auto swish = find_op("myops::swish").typed<Tensor(const Tensor&, double)>();
    std::cout << "swish on a Meta tensor of shape [64, 128]: "
              << swish.call(empty({64, 128}, TensorOptions().device(kMeta)), 1.0).sizes() << "\n\n";

    nn::Linear hidden(64, 64), output(64, 10);
    tensor_list parameters = hidden.parameters();
    for (const Tensor& p : output.parameters()) parameters.push_back(p);
    optim::Adam adam(parameters, optim::AdamOptions(1e-2));
    auto forward = [&](const Tensor& x) { return output.forward(swish.call(hidden.forward(x), 1.0)); };

    data::TensorDataset train(train_x, train_y);
    data::DataLoader loader(train, /*batch_size=*/64, /*shuffle=*/true, /*drop_last=*/false);
    for (int epoch = 1; epoch <= 20; ++epoch) {
      double loss_sum = 0;
      int64_t batches = 0;
      for (auto& [x, y] : loader) {
        Tensor loss = cross_entropy(forward(x), y);
        adam.zero_grad();
        loss.backward();
        adam.step();
        loss_sum += loss.item<double>();
        ++batches;
      }
      if (epoch % 5 == 0) {
        NoGradGuard no_grad;
        const double accuracy = eq(argmax(forward(test_x), 1), test_y).to(kFloat64).mean().item<double>();
        std::printf("epoch %2d  train loss %.4f  held-out accuracy %.1f%%\n", epoch, loss_sum / batches,
                    100 * accuracy);
      }
    }
  }
  std::cout << "\nafter the LibraryHandle is destroyed: ";
  try {
    find_op("myops::swish");
  } catch (const Error& error) {
    std::cout << error.what() << "\n";
  }
  return 0;
}
