# ExZarr fuzz regression case: raises ArgumentError in ExZarr.DType.info/1
# first seen at step :setup: {:raise, %{frame: "ExZarr.DType.info/1 (lib/ex_zarr/dtype.ex:309)", kind: ArgumentError, message: "unsupported data type: {:raw_bytes, 1099511627776}"}}
# found as case 880 of seed 186094 (EXZARR_FUZZ_SEED=186094) or while shrinking it, 16 shrinks
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
