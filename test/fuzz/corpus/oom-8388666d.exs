# ExZarr fuzz regression case: group.tree goes over the per-process heap limit
# first seen at step {:group, :tree}: {:oom, ":killed"}
# found as case 643 of seed 1 (EXZARR_FUZZ_SEED=1), 8 shrinks
%{
  kind: :group,
  ops: [open: [], group: :members, group: :tree, group: {:open, 0}],
  setup:
    {:store,
     [
       {".zgroup", {:json, %{"zarr_format" => 2}}},
       {".zmetadata",
        {:json,
         %{
           "metadata" => %{
             "./.zgroup" => %{"zarr_format" => 2},
             ".zgroup" => %{"zarr_format" => 2}
           },
           "zarr_consolidated_format" => 1
         }}}
     ]}
}
