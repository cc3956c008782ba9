defmodule ExZarr.StorageConformance do
  @moduledoc """
  The storage conformance suite: the same tests for every `ExZarr.Storage` backend.

  A backend's test file pulls them in with:

      defmodule ExZarr.Storage.MemoryTest do
        use ExUnit.Case, async: true
        use ExZarr.StorageConformance, backend: :memory, opts: fn _ctx -> [owner: self()] end
      end

  Options:
    * `:backend` - the backend name or module given to `ExZarr.Storage.new/2`.
    * `:opts` - a function from the test context to the backend's options. It runs in each
      test's process, so `ctx.tmp_dir` (with `@moduletag :tmp_dir`) and `self()` work. Each test
      must get an empty store.
    * `:large_size` - the byte size of the "large value" test (default 20 MB).
    * `:generations` - whether the backend tells generations (default true; reads of one
      without have the generation `nil`).
    * `:conditions` - whether the backend does conditional writes (default true; one without
      must say so with `ExZarr.Storage.conditional_writes?/1` and refuse them).
    * `:conditional_deletes` - whether a backend with conditional writes deletes on a
      generation in one step too (default true; `ExZarr.Storage.conditional_deletes?/1`).

  The store is in `ctx.store` (an `ExZarr.Storage`) for the backend's own tests too.
  """

  defmacro __using__(opts) do
    backend = Keyword.fetch!(opts, :backend)
    opts_fun = Keyword.fetch!(opts, :opts)
    large_size = Keyword.get(opts, :large_size, 20_000_000)
    generations? = Keyword.get(opts, :generations, true)
    conditions? = Keyword.get(opts, :conditions, true)
    deletes? = Keyword.get(opts, :conditional_deletes, true)

    quote do
      alias ExZarr.Storage

      setup ctx do
        {:ok, store} = Storage.new(unquote(backend), unquote(opts_fun).(ctx))
        %{store: store}
      end

      describe "conformance:" do
        test "a new store is empty", %{store: store} do
          assert Storage.list(store) == {:ok, []}
          assert Storage.get(store, "zarr.json") == {:error, :not_found}
        end

        test "put then get returns the value; overwrite replaces it", %{store: store} do
          assert :ok = Storage.put(store, "zarr.json", ~s({"zarr_format": 3}))
          assert Storage.get(store, "zarr.json") == {:ok, ~s({"zarr_format": 3})}
          assert :ok = Storage.put(store, "zarr.json", "{}")
          assert Storage.get(store, "zarr.json") == {:ok, "{}"}
          assert Storage.list(store) == {:ok, ["zarr.json"]}
        end

        test "missing keys read as :not_found, with or without a range", %{store: store} do
          :ok = Storage.put(store, "a/b", "x")
          assert Storage.get(store, "a/c") == {:error, :not_found}
          assert Storage.get(store, "b/c", {0, 1}) == {:error, :not_found}
          assert Storage.get(store, "b", {:suffix, 1}) == {:error, :not_found}
          # A key that is only a prefix of other keys is not a value.
          assert Storage.get(store, "a") == {:error, :not_found}
        end

        test "empty values are stored and read back", %{store: store} do
          :ok = Storage.put(store, "empty", "")
          :ok = Storage.put(store, "empty_iodata", [[], ""])
          assert Storage.get(store, "empty") == {:ok, ""}
          assert Storage.get(store, "empty_iodata") == {:ok, ""}
          assert Storage.get(store, "empty", {0, 10}) == {:ok, ""}
          assert Storage.get(store, "empty", {:suffix, 4}) == {:ok, ""}
          assert Storage.list(store) == {:ok, ["empty", "empty_iodata"]}
        end

        test "iodata values are stored as their bytes", %{store: store} do
          value = ["ab", [?c, ["de", <<0, 255>>]], "", [[["fg"]]]]
          :ok = Storage.put(store, "c/0/0", value)
          assert Storage.get(store, "c/0/0") == {:ok, IO.iodata_to_binary(value)}
          assert Storage.get(store, "c/0/0", {2, 3}) == {:ok, "cde"}
        end

        test "values that are not iodata are rejected and nothing is stored", %{store: store} do
          :ok = Storage.put(store, "k", "old")

          for bad <- [["a", :atom], 3.5, ["a", 256], %{}] do
            assert {:error, {:invalid_value, _}} = Storage.put(store, "k", bad)
            assert {:error, {:invalid_value, _}} = Storage.put(store, "new", bad)
          end

          assert Storage.get(store, "k") == {:ok, "old"}
          assert Storage.list(store) == {:ok, ["k"]}
        end

        test "ranged reads, clamped at the end like zarr-python", %{store: store} do
          :ok = Storage.put(store, "r", "0123456789")
          assert Storage.get(store, "r", {0, 3}) == {:ok, "012"}
          assert Storage.get(store, "r", {2, 3}) == {:ok, "234"}
          assert Storage.get(store, "r", {0, 10}) == {:ok, "0123456789"}
          assert Storage.get(store, "r", {8, 5}) == {:ok, "89"}
          assert Storage.get(store, "r", {10, 1}) == {:ok, ""}
          assert Storage.get(store, "r", {20, 4}) == {:ok, ""}
          assert Storage.get(store, "r", {3, 0}) == {:ok, ""}
          assert Storage.get(store, "r", {:suffix, 3}) == {:ok, "789"}
          assert Storage.get(store, "r", {:suffix, 10}) == {:ok, "0123456789"}
          assert Storage.get(store, "r", {:suffix, 20}) == {:ok, "0123456789"}
          assert Storage.get(store, "r", {:suffix, 0}) == {:ok, ""}
          assert Storage.get(store, "r", nil) == {:ok, "0123456789"}
        end

        test "get_ranges reads several ranges of one value, in order", %{store: store} do
          :ok = Storage.put(store, "r", "0123456789")

          assert Storage.get_ranges(store, "r", [{1, 2}, {:suffix, 3}, {8, 5}, {20, 1}, nil]) ==
                   {:ok, ["12", "789", "89", "", "0123456789"]}

          assert Storage.get_ranges(store, "r", [{0, 0}]) == {:ok, [""]}
          assert Storage.get_ranges(store, "r", []) == {:ok, []}
          assert Storage.get_ranges(store, "missing", [{0, 1}, {2, 3}]) == {:error, :not_found}

          assert Storage.get_ranges(store, "r", [{0, 1}, :bad]) ==
                   {:error, {:invalid_range, :bad}}
        end

        test "malformed ranges are rejected", %{store: store} do
          :ok = Storage.put(store, "r", "0123456789")

          for bad <- [{-1, 2}, {0, -1}, {:suffix, -1}, {1.0, 2}, :all, {0, 1, 2}] do
            assert Storage.get(store, "r", bad) == {:error, {:invalid_range, bad}}
          end
        end

        test "size/2 gives a value's byte size; describe/1 says where the store is", %{
          store: store
        } do
          :ok = Storage.put(store, "a/c/0", :binary.copy(<<7>>, 1000))
          :ok = Storage.put(store, "a/empty", "")
          assert Storage.size(store, "a/c/0") == {:ok, 1000}
          assert Storage.size(store, "a/empty") == {:ok, 0}
          assert Storage.size(store, "a/missing") == {:error, :not_found}
          assert Storage.size(store, "a") == {:error, :not_found}
          assert {:error, {:invalid_key, _}} = Storage.size(store, "../x")
          assert is_binary(Storage.describe(store))
        end

        test "supports_ranges? answers a boolean", %{store: store} do
          assert is_boolean(Storage.supports_ranges?(store))
        end

        test "delete removes a value; deleting a missing key is fine", %{store: store} do
          :ok = Storage.put(store, "a/b", "1")
          :ok = Storage.put(store, "a/c", "2")
          assert Storage.delete(store, "a/b") == :ok
          assert Storage.get(store, "a/b") == {:error, :not_found}
          assert Storage.get(store, "a/c") == {:ok, "2"}
          assert Storage.delete(store, "a/b") == :ok
          assert Storage.delete(store, "never/was") == :ok
          assert Storage.list(store) == {:ok, ["a/c"]}
        end

        test "list selects keys below a prefix, recursively and sorted", %{store: store} do
          keys = ["zarr.json", "a/zarr.json", "a/c/0/0", "a/c/0/1", "a/c/1/0", "ab/x", "b/c"]
          for key <- keys, do: :ok = Storage.put(store, key, key)

          assert Storage.list(store) == {:ok, Enum.sort(keys)}
          assert Storage.list(store, "") == {:ok, Enum.sort(keys)}

          assert Storage.list(store, "a") ==
                   {:ok, ["a/c/0/0", "a/c/0/1", "a/c/1/0", "a/zarr.json"]}

          assert Storage.list(store, "a/") == Storage.list(store, "a")
          assert Storage.list(store, "a/c/0") == {:ok, ["a/c/0/0", "a/c/0/1"]}
          assert Storage.list(store, "a/c/0/0") == {:ok, []}
          assert Storage.list(store, "nothing") == {:ok, []}
          assert Storage.list(store, "ab") == {:ok, ["ab/x"]}
        end

        test "list_dir gives the direct children of a prefix", %{store: store} do
          keys = ["zarr.json", "b", "a/zarr.json", "a/c/0/0", "a/c/1/0", "ab/x", "a b/ü"]
          for key <- keys, do: :ok = Storage.put(store, key, key)

          assert Storage.list_dir(store) ==
                   {:ok, %{keys: ["b", "zarr.json"], prefixes: ["a", "a b", "ab"]}}

          assert Storage.list_dir(store, "a") == {:ok, %{keys: ["zarr.json"], prefixes: ["c"]}}
          assert Storage.list_dir(store, "a/") == Storage.list_dir(store, "a")
          assert Storage.list_dir(store, "a b") == {:ok, %{keys: ["ü"], prefixes: []}}
          assert Storage.list_dir(store, "a/c/0") == {:ok, %{keys: ["0"], prefixes: []}}
          assert Storage.list_dir(store, "nothing") == {:ok, %{keys: [], prefixes: []}}
          assert {:error, {:invalid_key, _}} = Storage.list_dir(store, "../x")
        end

        test "large values round-trip and serve ranges", %{store: store} do
          value = :crypto.strong_rand_bytes(unquote(large_size))
          assert :ok = Storage.put(store, "big", value)
          assert Storage.get(store, "big") == {:ok, value}
          mid = div(unquote(large_size), 2)
          assert Storage.get(store, "big", {mid, 1000}) == {:ok, binary_part(value, mid, 1000)}

          assert Storage.get(store, "big", {:suffix, 100}) ==
                   {:ok, binary_part(value, unquote(large_size) - 100, 100)}
        end

        test "reads name the generation they come from; a rewrite gives a new one",
             %{store: store} do
          :ok = Storage.put(store, "g/0", "0123456789")

          assert {:ok, ["01", "89"], gen} =
                   Storage.get_ranges_with_generation(store, "g/0", [{0, 2}, {:suffix, 2}])

          assert {:ok, ["2345", ""], ^gen} =
                   Storage.get_ranges_with_generation(store, "g/0", [{2, 4}, {10, 0}], gen)

          assert {:ok, ["0123456789"], ^gen} =
                   Storage.get_ranges_with_generation(store, "g/0", [nil])

          # a rewrite of the same size, at once
          :ok = Storage.put(store, "g/0", "abcdefghij")

          assert {:ok, ["ab"], new_gen} =
                   Storage.get_ranges_with_generation(store, "g/0", [{0, 2}])

          if unquote(generations?) do
            assert gen != nil and new_gen != gen

            assert Storage.get_ranges_with_generation(store, "g/0", [{0, 2}, {4, 2}], gen) ==
                     {:error, :generation_mismatch}
          else
            assert gen == nil and new_gen == nil
          end

          assert Storage.get_ranges_with_generation(store, "g/1", [{0, 1}]) ==
                   {:error, :not_found}

          assert Storage.identity(store, "g/0") == Storage.identity(store, "g/0")
          assert Storage.identity(store, "g/0") != Storage.identity(store, "g/1")
        end

        if unquote(conditions?) do
          test "put_if: on absence, on a generation read or written, never on a stale one",
               %{store: store} do
            assert Storage.conditional_writes?(store)
            assert {:ok, g1} = Storage.put_if(store, "cas/k", "one", :absent)

            assert Storage.put_if(store, "cas/k", "two", :absent) ==
                     {:error, :generation_mismatch}

            assert Storage.get(store, "cas/k") == {:ok, "one"}
            # the generation a conditional put returns is the one reads report
            assert {:ok, ["one"], ^g1} = Storage.get_ranges_with_generation(store, "cas/k", [nil])

            assert {:ok, g2} = Storage.put_if(store, "cas/k", ["tw", ["o"]], g1)
            assert g2 != g1
            assert Storage.put_if(store, "cas/k", "three", g1) == {:error, :generation_mismatch}
            assert Storage.get(store, "cas/k") == {:ok, "two"}

            assert {:ok, g3} = Storage.put_if(store, "cas/k", "three", :any)

            assert {:ok, ["three"], ^g3} =
                     Storage.get_ranges_with_generation(store, "cas/k", [nil])

            assert {:ok, _g4} = Storage.put_if(store, "cas/k", "four", g3)

            # a plain put is a new generation too
            {:ok, [_], g5} = Storage.get_ranges_with_generation(store, "cas/k", [nil])
            :ok = Storage.put(store, "cas/k", "five")
            assert Storage.put_if(store, "cas/k", "six", g5) == {:error, :generation_mismatch}

            # generations this store never made match nothing
            for foreign <- [make_ref(), {:other, 1}, "not-a-generation", :other] do
              assert Storage.put_if(store, "cas/k", "x", foreign) ==
                       {:error, :generation_mismatch}
            end

            assert Storage.get(store, "cas/k") == {:ok, "five"}
            assert Storage.put_if(store, "cas/k", "x", nil) == {:error, {:invalid_condition, nil}}
            assert {:error, {:invalid_key, _}} = Storage.put_if(store, "../k", "x", :absent)

            assert {:error, {:invalid_value, _}} =
                     Storage.put_if(store, "cas/new", ["a", :bad], :absent)

            assert Storage.get(store, "cas/new") == {:error, :not_found}
          end

          test "put_if: a deleted key is absent again; its old generation is gone",
               %{store: store} do
            {:ok, gen} = Storage.put_if(store, "cas/d", "old", :absent)
            :ok = Storage.delete(store, "cas/d")
            assert Storage.put_if(store, "cas/d", "new", gen) == {:error, :generation_mismatch}
            assert Storage.get(store, "cas/d") == {:error, :not_found}
            assert {:ok, _} = Storage.put_if(store, "cas/d", "new", :absent)
            assert Storage.get(store, "cas/d") == {:ok, "new"}
          end

          test "delete_if: deletes only the generation read; update's {:delete, _} uses it",
               %{store: store} do
            assert Storage.conditional_deletes?(store) == unquote(deletes?)
            {:ok, g1} = Storage.put_if(store, "del/k", "one", :absent)

            if unquote(deletes?) do
              {:ok, g2} = Storage.put_if(store, "del/k", "two", g1)
              assert Storage.delete_if(store, "del/k", g1) == {:error, :generation_mismatch}

              for foreign <- [make_ref(), {:other, 1}, "not-a-generation", :absent, :any] do
                assert Storage.delete_if(store, "del/k", foreign) ==
                         {:error, :generation_mismatch}
              end

              assert Storage.get(store, "del/k") == {:ok, "two"}
              assert Storage.delete_if(store, "del/k", g2) == :ok
              assert Storage.get(store, "del/k") == {:error, :not_found}
              assert Storage.delete_if(store, "del/k", g2) == {:error, :generation_mismatch}
              assert {:error, {:invalid_key, _}} = Storage.delete_if(store, "../k", g2)
            else
              assert {:error, {:conditional_deletes_unsupported, _}} =
                       Storage.delete_if(store, "del/k", g1)
            end

            :ok = Storage.put(store, "del/u", "v")

            assert {:ok, :gone, nil} =
                     Storage.update(store, "del/u", fn "v" -> {:delete, :gone} end)

            assert Storage.get(store, "del/u") == {:error, :not_found}
          end

          test "verify_conditional_writes/1 proves the conditions by experiment",
               %{store: store} do
            assert Storage.verify_conditional_writes(store) == :ok
            assert Storage.list(store) == {:ok, []}
          end

          test "update: concurrent read-modify-writes of one key lose nothing",
               %{store: store} do
            tokens = for w <- 1..6, i <- 1..4, do: "w#{w}i#{i}"

            # Without the node lock, every conflict is settled by the store's conditions.
            for node_lock <- [false, true] do
              key = "cas/u#{node_lock}"

              results =
                tokens
                |> Task.async_stream(
                  fn token ->
                    Storage.update(
                      store,
                      key,
                      fn current ->
                        current = current || ""

                        if String.contains?(current, ";" <> token <> ";"),
                          do: {:keep, :already},
                          else: {:write, [current, ";", token, ";"], :added}
                      end,
                      node_lock: node_lock,
                      attempts: 200,
                      max_backoff: 200
                    )
                  end,
                  max_concurrency: 6,
                  timeout: 300_000
                )
                |> Enum.map(fn {:ok, {:ok, reply, _gen}} -> reply end)

              assert Enum.all?(results, &(&1 == :added))
              {:ok, value} = Storage.get(store, key)
              stored = String.split(value, ";", trim: true)
              assert Enum.sort(stored) == Enum.sort(tokens)
            end
          end

          test "update: the function's answers", %{store: store} do
            assert {:ok, :created, gen} =
                     Storage.update(store, "cas/f", fn nil -> {:write, "1", :created} end)

            assert {:ok, ["1"], ^gen} = Storage.get_ranges_with_generation(store, "cas/f", [nil])

            assert Storage.update(store, "cas/f", fn "1" -> {:keep, :same} end) ==
                     {:ok, :same, gen}

            assert Storage.update(store, "cas/none", fn nil -> {:keep, :no} end) ==
                     {:ok, :no, nil}

            assert Storage.update(store, "cas/f", fn _ -> {:error, :mine} end) == {:error, :mine}

            assert Storage.update(store, "cas/f", fn _ -> :what end) ==
                     {:error, {:invalid_update_result, :what}}

            assert Storage.update(store, "cas/f", fn _ -> {:write, "2", :ok} end, attempts: 0) ==
                     {:error, {:invalid_option, :attempts, 0}}

            assert Storage.update(store, "cas/f", fn _ -> {:write, "2", :ok} end, retries: 3) ==
                     {:error, {:unknown_option, :retries}}

            assert {:error, {:invalid_key, _}} =
                     Storage.update(store, "/x", fn _ -> {:keep, 1} end)

            assert Storage.get(store, "cas/f") == {:ok, "1"}
          end
        else
          test "a store without conditions says so and refuses conditional writes",
               %{store: store} do
            refute Storage.conditional_writes?(store)

            assert {:error, {:conditional_writes_unsupported, _}} =
                     Storage.put_if(store, "cas/k", "v", :absent)

            assert {:error, {:conditional_writes_unsupported, _}} =
                     Storage.update(store, "cas/k", fn _ -> {:write, "v", :ok} end)

            assert {:ok, :ok, nil} =
                     Storage.update(store, "cas/k", fn nil -> {:write, "v", :ok} end,
                       without_conditions: :node_lock
                     )

            assert Storage.get(store, "cas/k") == {:ok, "v"}
          end
        end

        test "concurrent writers to distinct keys all land", %{store: store} do
          results =
            1..64
            |> Task.async_stream(
              fn i ->
                Storage.put(store, "c/#{rem(i, 4)}/#{i}", :binary.copy(<<i>>, 1000 + i))
              end,
              max_concurrency: 16
            )
            |> Enum.to_list()

          assert Enum.all?(results, &(&1 == {:ok, :ok}))

          for i <- 1..64 do
            assert Storage.get(store, "c/#{rem(i, 4)}/#{i}") ==
                     {:ok, :binary.copy(<<i>>, 1000 + i)}
          end

          assert {:ok, keys} = Storage.list(store, "c")
          assert length(keys) == 64
        end

        test "concurrent readers see whole values while a key is overwritten", %{store: store} do
          old = :binary.copy("o", 200_000)
          new = :binary.copy("n", 200_000)
          :ok = Storage.put(store, "k", old)

          readers =
            Task.async(fn ->
              for _ <- 1..50, do: Storage.get(store, "k")
            end)

          for _ <- 1..10, do: :ok = Storage.put(store, "k", Enum.random([old, new]))

          assert Enum.all?(Task.await(readers, 60_000), &(&1 in [{:ok, old}, {:ok, new}]))
        end

        test "keys with unusual characters", %{store: store} do
          keys = [
            "with space/a b",
            "ünïcödé/ключ/鍵",
            "a/.zarray",
            "a/.zattrs",
            ".zgroup",
            "c/0.1",
            "c/0.1.2",
            "x-y_z~w+v=u,t;s@r!q(p)",
            "%41%2F",
            "dots.../...x"
          ]

          for key <- keys, do: assert(:ok = Storage.put(store, key, "v:" <> key))
          for key <- keys, do: assert(Storage.get(store, key) == {:ok, "v:" <> key})
          assert Storage.list(store) == {:ok, Enum.sort(keys)}
          assert Storage.list(store, "a") == {:ok, ["a/.zarray", "a/.zattrs"]}
          for key <- keys, do: :ok = Storage.delete(store, key)
          assert Storage.list(store) == {:ok, []}
        end

        test "keys that try to leave the root are rejected and touch nothing", %{store: store} do
          :ok = Storage.put(store, "a/b", "inside")

          bad =
            ["../x", "a/../../x", "a/..", "..", "/abs", "/", "a//b", "a/", "a\\b", "..\\x"] ++
              ["", ".", "./a", "a/./b", "a/b\0c", <<0xFF, 0xFE>>, :atom, ~c"a/b", nil]

          for key <- bad do
            assert {:error, {:invalid_key, ^key}} = Storage.get(store, key)
            assert {:error, {:invalid_key, ^key}} = Storage.get(store, key, {0, 1})
            assert {:error, {:invalid_key, ^key}} = Storage.put(store, key, "evil")
            assert {:error, {:invalid_key, ^key}} = Storage.delete(store, key)
          end

          for prefix <- ["..", "../", "a/../..", "/abs"] do
            assert {:error, {:invalid_key, _}} = Storage.list(store, prefix)
          end

          assert Storage.list(store) == {:ok, ["a/b"]}
          assert Storage.get(store, "a/b") == {:ok, "inside"}
        end
      end
    end
  end
end
