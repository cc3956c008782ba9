# ExZarr fuzz regression case: the VM dies in setup: binary_alloc: Cannot allocate N bytes of memory (of type "binary").
# first seen at step :setup: {:death, "binary_alloc: Cannot allocate 1099511627776 bytes of memory (of type \"binary\").\r | exit status 1"}
# found as case 234 of seed 1 (EXZARR_FUZZ_SEED=1), 19 shrinks
%{
  kind: :api,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:resize, {:delta, [0]}},
    {:get_slice, {:box, 0, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 3,
       dtype: {:structured, [{"a", {:raw_bytes, 1_099_511_627_776}, :little, {}}]},
       shape: {0},
       compressor: %{id: "bitround"},
       order: "C",
       endian: :little,
       chunks: {1}
     ]}
}
