// A table: an ordered index from keys to OIDs and the OID array holding each record's chain.
#pragma once

#include <cstdint>
#include <string>

#include "index/btree.h"
#include "mvcc/oid_array.h"

namespace braid {

class Table {
 public:
  Table(std::uint32_t id, std::string name) : id_(id), name_(std::move(name)) {}
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  std::uint32_t id() const { return id_; }
  const std::string& name() const { return name_; }

  index::BTree& index() { return index_; }
  mvcc::OidArray& oids() { return oids_; }

 private:
  std::uint32_t id_;
  std::string name_;
  index::BTree index_;
  mvcc::OidArray oids_;
};

}  // namespace braid
