# ExZarr fuzz regression case: raises ArgumentError in ExZarr.Node.key/2
# first seen at step {:open, [prefix: {}]}: {:raise, %{frame: "ExZarr.Node.key/2 (lib/ex_zarr/node.ex:67)", kind: ArgumentError, message: "construction of binary failed: segment 1 of type 'binary': expected a binary but got: {}"}}
# found as case 178 of seed 2 (EXZARR_FUZZ_SEED=2), 7 shrinks
%{
  kind: :group,
  ops: [
    open: [],
    group: :members,
    group: :tree,
    group: {:open, 0},
    open: [prefix: 0],
    group: :members,
    group: :members
  ],
  setup:
    {:store,
     [
       {"zarr.json",
        {:json,
         %{
           "attributes" => %{},
           "consolidated_metadata" => :null,
           "node_type" => "group",
           "zarr_format" => 3
         }}}
     ]}
}
