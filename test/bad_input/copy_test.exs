defmodule ExZarr.BadInput.CopyTest do
  @moduledoc """
  `ExZarr.Jobs.copy/3` given a target it cannot copy to: the source itself (by path or by
  its store), a node inside the source, or a directory above it (which `overwrite: true`
  deleted, source included, before the copy read it), or a shape or data type the bytes of
  the source cannot fill. Each is an error before anything is created or deleted: the
  directory is unchanged. And jobs over more blocks than memory can list.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Jobs
  alias ExZarr.Test.{Interop, Snapshot}

  setup do
    dir = Interop.tmp_dir!("bad-copy")
    on_exit(fn -> File.rm_rf!(dir) end)
    src = Path.join(dir, "src.zarr")
    {:ok, a} = ExZarr.create(shape: {8, 8}, chunks: {4, 4}, dtype: :int32, path: src)
    :ok = ExZarr.Array.set_slice(a, for(i <- 0..63, into: <<>>, do: <<i::32-little>>))
    %{dir: dir, src: src, a: a}
  end

  test "a target that is the source, inside it or above it", ctx do
    {:ok, group} = ExZarr.create_group(path: Path.join(ctx.dir, "g.zarr"))
    {:ok, member} = ExZarr.Group.create_array(group, "m", shape: {2}, chunks: {2}, dtype: :int8)

    for {source, target} <- [
          {ctx.a, [path: ctx.src]},
          {ctx.a, [path: ctx.src, overwrite: true]},
          {ctx.a, [path: "file://" <> ctx.src <> "/", overwrite: true]},
          {ctx.a, [storage: ctx.a.storage, overwrite: true]},
          {ctx.a, [path: Path.join(ctx.src, "inner"), overwrite: true]},
          {ctx.a, [path: ctx.dir, overwrite: true]},
          {member, [path: Path.join(ctx.dir, "g.zarr"), overwrite: true]},
          {member, [storage: member.storage, prefix: "m", overwrite: true]},
          {member, [storage: member.storage, prefix: "m/x"]}
        ] do
      before = Snapshot.take(ctx.dir)
      assert {:error, {:target_overlaps_source, _}} = Jobs.copy(source, target, [])
      assert Snapshot.take(ctx.dir) == before, inspect(target)
    end

    # beside the source, in the same store and directory: copied
    assert {:ok, copy} = Jobs.copy(member, [storage: member.storage, prefix: "m2"], [])
    assert ExZarr.Array.get_slice(copy) == ExZarr.Array.get_slice(member)
    assert {:ok, _} = Jobs.copy(ctx.a, [path: Path.join(ctx.dir, "src.zarr2")], [])
  end

  @tag timeout: 60_000
  test "jobs over more blocks than memory can list are refused, not run out of memory" do
    max = 2 ** 63 - 1
    {:ok, a} = ExZarr.create(storage: :memory, shape: {max, max}, chunks: {5, 5}, dtype: :uint8)
    {:ok, t} = ExZarr.create(storage: :memory, shape: {max, max}, chunks: {5, 5}, dtype: :uint8)

    assert {:error, {:too_large, :chunks_touched, _, _}} = Jobs.copy(a, [storage: :memory], [])

    assert {:error, {:too_large, :chunks_touched, _, _}} =
             Jobs.copy(a, [storage: :memory], block: {1, 1})

    assert {:error, {:too_large, :chunks_touched, _, _}} =
             Jobs.map_blocks(a, t, {Jobs, :identity, []}, [])

    assert {:error, {:too_large, :chunks_touched, _, _}} =
             Jobs.reduce_blocks(a, fn data, _box -> byte_size(data) end, &+/2, [])
  end

  test "a target of another shape or data type", ctx do
    before = Snapshot.take(ctx.dir)
    target = Path.join(ctx.dir, "t.zarr")

    assert {:error, {:dtype_mismatch, :int32, :float32}} =
             Jobs.copy(ctx.a, [path: target, dtype: :float32], [])

    assert {:error, {:dtype_mismatch, :int32, :int8}} =
             Jobs.copy(ctx.a, [path: target, dtype: :int8], [])

    assert {:error, {:shape_mismatch, {8, 8}, {4, 4}}} =
             Jobs.copy(ctx.a, [path: target, shape: {4, 4}], [])

    assert Snapshot.take(ctx.dir) == before
  end
end
