# ExZarr fuzz regression case: raises ArgumentError in ExZarr.Sharding.write_chunk/3
# first seen at step {:write_chunk, [], :fit}: {:raise, %{frame: "ExZarr.Sharding.write_chunk/3 (lib/ex_zarr/sharding.ex:474)", kind: ArgumentError, message: "errors were found at the given arguments:"}}
# found as case 1496 of seed 2 (EXZARR_FUZZ_SEED=2), 33 shrinks
%{
  kind: :api,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:write_chunk, 0, :fit},
    {:get_slice, {:box, 0, [], false}},
    {:resize, {:delta, [0]}},
    {:get_slice, {:box, 0, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 3,
       dtype: :int32,
       shape: {0},
       compressor: %{id: "blosc"},
       order: "C",
       endian: :little,
       chunks: {1},
       shards: {1}
     ]}
}
