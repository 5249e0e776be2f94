#pragma once
// nn::Sequential: modules called one after another, named "0", "1", ... unless named otherwise.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <strata/nn/module.h>

namespace strata::nn {

class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  // Sequential(nn::Linear(2, 3), nn::ReLU(), std::make_shared<MyModule>()).
  template <class... Modules>
    requires(sizeof...(Modules) > 0)
  explicit SequentialImpl(Modules&&... modules) : Module("Sequential") {
    (push_back(std::forward<Modules>(modules)), ...);
  }

  // Appends a handle or a std::shared_ptr to a module with `Tensor forward(const Tensor&)`.
  template <class Holder>
    requires requires(const Holder& h) { typename Holder::ImplType; h.ptr(); }
  void push_back(const Holder& holder) {
    push_back(holder.ptr());
  }
  template <class M>
  void push_back(std::shared_ptr<M> module) {
    push_back(std::to_string(modules_.size()), std::move(module));
  }
  // The same under a name of one's own instead of the position.
  template <class Holder>
    requires requires(const Holder& h) { typename Holder::ImplType; h.ptr(); }
  void push_back(std::string name, const Holder& holder) {
    push_back(std::move(name), holder.ptr());
  }
  template <class M>
  void push_back(std::string name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "Sequential holds Modules");
    std::shared_ptr<M> owner = module;
    append(std::move(name), std::move(module), [owner](const Tensor& x) -> Tensor { return owner->forward(x); });
  }

  Tensor forward(const Tensor& input);
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  // The i-th module (IndexError when out of range); at<T>(i) casts it to its Impl type.
  std::shared_ptr<Module> operator[](size_t index) const;
  template <class T>
  T& at(size_t index) const {
    auto* module = dynamic_cast<T*>((*this)[index].get());
    if (!module) throw_wrong_type(index);
    return *module;
  }

 private:
  void append(std::string name, std::shared_ptr<Module> module, std::function<Tensor(const Tensor&)> forward);
  [[noreturn]] void throw_wrong_type(size_t index) const;

  std::vector<std::pair<std::shared_ptr<Module>, std::function<Tensor(const Tensor&)>>> modules_;
};

class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;

  template <class... Args>
  void push_back(Args&&... args) const {
    get()->push_back(std::forward<Args>(args)...);
  }
  size_t size() const { return get()->size(); }
  std::shared_ptr<Module> operator[](size_t index) const { return (*get())[index]; }
};

}  // namespace strata::nn
