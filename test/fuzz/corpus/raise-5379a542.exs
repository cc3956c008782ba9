# ExZarr fuzz regression case: raises FunctionClauseError in ExZarr.Array.append/4
# first seen at step {:append, {1, 65}, {1.5, 2}}: {:raise, %{frame: "ExZarr.Array.append/4 (lib/ex_zarr/array.ex:311)", kind: FunctionClauseError, message: "no function clause matching in ExZarr.Array.append/4"}}
# found as case 238 of seed 2 (EXZARR_FUZZ_SEED=2), 60 shrinks
%{
  kind: :mutated,
  mutations: [{:doc, 0, 0, :delete}],
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:append, 0, 0},
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
       compressor: nil,
       order: "C",
       endian: :little,
       chunks: {1}
     ]}
}
