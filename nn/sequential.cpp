// nn::Sequential.
#include <strata/nn/sequential.h>

namespace strata::nn {

void SequentialImpl::append(std::string name, std::shared_ptr<Module> module,
                            std::function<Tensor(const Tensor&)> forward) {
  register_module(std::move(name), module);
  modules_.emplace_back(std::move(module), std::move(forward));
}

Tensor SequentialImpl::forward(const Tensor& input) {
  STRATA_CHECK_VALUE(!modules_.empty(), "[Sequential] forward of an empty Sequential");
  Tensor x = input;
  for (const auto& [module, call] : modules_) x = call(x);
  return x;
}

std::shared_ptr<Module> SequentialImpl::operator[](size_t index) const {
  STRATA_CHECK_INDEX(index < modules_.size(), "[Sequential] index ", index, " is out of range for a Sequential of ",
                     modules_.size(), " modules");
  return modules_[index].first;
}

void SequentialImpl::throw_wrong_type(size_t index) const {
  strata::detail::throw_error<TypeError>("[Sequential] module ", index, " (", (*this)[index]->name(),
                                         ") is not of the requested type");
}

}  // namespace strata::nn
