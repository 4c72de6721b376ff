// Growable arrays of a trivially copyable T, many of them, whose first entry needs no heap block
// of its own: the flow network keeps the flows through each link in such an array
// (flow_network.h, Link::flows), and a tree across 131,072 GPUs attaches 4.2 million of them,
// most holding one entry. As std::vector each cost a malloc when it took its first entry and a
// free when the network went (10% of that run's instructions), and 32 bytes of heap for a
// 24-byte entry.
//
// Storage: a list of one entry keeps it in a slot carved from the pool's chunks (64 KiB each),
// or reused from the slots that lists growing past one freed. From two entries on, a list's
// block comes from the heap, its capacity doubling as a vector's would, or as large as reserve()
// asks. Why not pool those too:
// the flows sharing a link arrive one by one, so those links' lists grow in step through 2, 4
// and 8 entries, and no later list of that size reuses what they leave; the heap gives it to
// anything (measured: a pool of every size held 22 MB more at the peak of the 16,384-GPU tree,
// 8% of the heap). The owner gives back a list's heap block with release() before forgetting
// the list; the slots go back to the heap with clear() or the pool's end. Single-threaded, as
// its owner is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "core/errors.h"

namespace cs::net {

template <class T>
class PooledLists {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) >= sizeof(void*) &&
                alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

 public:
  // A list: its entries, [begin(), end()). 16 bytes; a default List is empty and owns nothing.
  // A view of its storage: push_back and release go through the pool, the rest is here.
  class List {
   public:
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    T& operator[](std::size_t i) const { return data_[i]; }
    T& back() const { return data_[size_ - 1]; }
    void pop_back() { --size_; }
    T* begin() const { return data_; }
    T* end() const { return data_ + size_; }

   private:
    friend class PooledLists;
    T* data_ = nullptr;
    std::uint32_t size_ = 0;
    std::uint32_t capacity_ = 0;
  };

  PooledLists() = default;
  PooledLists(const PooledLists&) = delete;
  PooledLists& operator=(const PooledLists&) = delete;
  ~PooledLists() = default;

  // Appends `value` to `list` (a list of this pool, or a default one).
  void push_back(List& list, const T& value) {
    if (list.size_ == list.capacity_) grow(list);
    list.data_[list.size_++] = value;
  }

  // Makes room for `entries` in all (fewer: nothing): a list that will hold that many takes one
  // block for them instead of one per doubling; one entry takes a slot, as push_back's first.
  void reserve(List& list, std::size_t entries) {
    if (entries <= list.capacity_) return;
    if (entries >= (std::size_t{1} << 31)) throw InternalError("PooledLists: a list of 2^31 entries");
    if (entries == 1) return grow(list);  // its slot
    move_to_block(list, static_cast<std::uint32_t>(entries));
  }
  // Gives back the heap block of a list that grew past one entry, leaving it a default List; a
  // list of one slot keeps it (clear() takes the slots). Every list that grew past one entry
  // must be released before the pool goes, or its block is lost.
  void release(List& list) {
    if (list.capacity_ > 1) ::operator delete(list.data_);
    list = List{};
  }

  // Forgets every slot at once. The owner has released each of its lists (they are then default).
  void clear() {
    chunks_.clear();
    next_ = end_ = nullptr;
    free_ = nullptr;
  }

 private:
  static constexpr std::size_t kChunkSlots = (std::size_t{64} << 10) / sizeof(T);

  void grow(List& list) {
    if (list.capacity_ == 0) {
      list.data_ = slot();
      list.capacity_ = 1;
      return;
    }
    if (list.capacity_ >= (1u << 31)) throw InternalError("PooledLists: a list of 2^31 entries");
    move_to_block(list, 2 * list.capacity_);
  }
  // Moves a list into a heap block of `capacity` (> its capacity, > 1) entries.
  void move_to_block(List& list, std::uint32_t capacity) {
    T* block = static_cast<T*>(::operator new(std::size_t{capacity} * sizeof(T)));
    if (list.size_ > 0) std::memcpy(static_cast<void*>(block), list.data_, list.size_ * sizeof(T));
    if (list.capacity_ == 1) {
      std::memcpy(static_cast<void*>(list.data_), &free_, sizeof(void*));  // the slot's next free one
      free_ = list.data_;
    } else if (list.capacity_ > 1) {
      ::operator delete(list.data_);
    }
    list.data_ = block;
    list.capacity_ = capacity;
  }
  T* slot() {
    if (void* head = free_) {
      std::memcpy(&free_, head, sizeof(void*));
      return static_cast<T*>(head);
    }
    if (next_ == end_) {
      chunks_.push_back(std::make_unique_for_overwrite<T[]>(kChunkSlots));
      next_ = chunks_.back().get();
      end_ = next_ + kChunkSlots;
    }
    return next_++;
  }

  std::vector<std::unique_ptr<T[]>> chunks_;
  T* next_ = nullptr;  // the current chunk's unused slots
  T* end_ = nullptr;
  void* free_ = nullptr;  // the first free slot (each keeps the next's address)
};

}  // namespace cs::net
