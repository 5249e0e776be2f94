// End-to-end: an MLP trained on the UCI digits data (samples/data/digits.csv.gz) reaches at
// least 95% held-out accuracy in a few seconds; a checkpoint taken mid-training resumes the
// run bit for bit.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

using namespace strata;

namespace {

struct Split {
  Tensor train_x, train_y, test_x, test_y;
};

// A fixed random 80/20 split of the 1,797 digits.
Split split_digits() {
  data::Example digits = data::load_digits(STRATA_TEST_DATA_DIR "/digits.csv.gz");
  const int64_t count = digits.data.size(0), train_count = count * 4 / 5;
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  Tensor index = tensor(order, {count}, kInt64);
  Tensor train_index = index.slice(0, 0, train_count), test_index = index.slice(0, train_count, count);
  return {digits.data.index_select(0, train_index), digits.target.index_select(0, train_index),
          digits.data.index_select(0, test_index), digits.target.index_select(0, test_index)};
}

double accuracy(nn::Sequential& net, const Tensor& x, const Tensor& y) {
  NoGradGuard no_grad;
  return eq(argmax(net.forward(x), 1), y).to(kFloat64).mean().item<double>();
}

void train_epochs(nn::Sequential& net, optim::Optimizer& optimizer, data::DataLoader& loader, int epochs) {
  for (int epoch = 0; epoch < epochs; ++epoch)
    for (auto& [x, y] : loader) {
      Tensor loss = cross_entropy(net.forward(x), y);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
    }
}

nn::Sequential make_net() { return nn::Sequential(nn::Linear(64, 64), nn::ReLU(), nn::Linear(64, 10)); }

}  // namespace

TEST_CASE("training: an MLP on the digits reaches 95% held-out accuracy") {
  const Split split = split_digits();
  manual_seed(0);
  nn::Sequential net = make_net();
  optim::Adam adam(net.parameters(), optim::AdamOptions(1e-2));
  data::TensorDataset train_set(split.train_x, split.train_y);
  data::DataLoader loader(train_set, 32, /*shuffle=*/true);
  train_epochs(net, adam, loader, 15);
  const double held_out = accuracy(net, split.test_x, split.test_y);
  MESSAGE("digits held-out accuracy: ", held_out);
  CHECK(held_out >= 0.95);
}

TEST_CASE("training: a checkpoint of model and optimizer resumes the run bit for bit") {
  const Split split = split_digits();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "strata_test_checkpoint";
  std::filesystem::create_directories(dir);
  const std::string model_path = (dir / "net.safetensors").string(), adam_path = (dir / "adam.safetensors").string();
  data::TensorDataset train_set(split.train_x, split.train_y);

  // Run A: 2 epochs, checkpoint, 2 more epochs.
  manual_seed(1);
  nn::Sequential net = make_net();
  optim::Adam adam(net.parameters(), optim::AdamOptions(1e-2));
  data::DataLoader loader(train_set, 32, /*shuffle=*/false);
  train_epochs(net, adam, loader, 2);
  nn::save(net, model_path);
  optim::save(adam, adam_path);
  train_epochs(net, adam, loader, 2);

  // Run B: a fresh model and optimizer restored from the checkpoint, 2 epochs.
  manual_seed(99);  // different initial weights: everything must come from the files
  nn::Sequential resumed = make_net();
  optim::Adam resumed_adam(resumed.parameters(), optim::AdamOptions(1e-2));
  nn::load(resumed, model_path);
  optim::load(resumed_adam, adam_path);
  train_epochs(resumed, resumed_adam, loader, 2);

  const auto a = net.named_parameters(), b = resumed.named_parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(equal(a[i].second, b[i].second));
  }
  std::filesystem::remove_all(dir);
}
