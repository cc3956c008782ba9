defmodule ExZarr.Storage.ObjectStoreTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.ObjectStore

  doctest ExZarr.Storage.ObjectStore

  # A bucket listed `per_page` names at a time, as a service would: names and, with the
  # delimiter "/", the common prefixes after `prefix`, with a token for the next page.
  defp bucket(names, per_page, test_pid \\ nil) do
    fn prefix, delimiter, token ->
      if test_pid, do: send(test_pid, {:page, prefix, delimiter, token})

      entries =
        names
        |> Enum.filter(&String.starts_with?(&1, prefix))
        |> Enum.map(fn name ->
          rest = binary_part(name, byte_size(prefix), byte_size(name) - byte_size(prefix))

          case delimiter && :binary.split(rest, delimiter) do
            [dir, _] -> {:prefix, prefix <> dir <> "/"}
            _ -> {:name, name}
          end
        end)
        |> Enum.uniq()
        |> Enum.sort()

      start = if token, do: String.to_integer(token), else: 0
      page = Enum.slice(entries, start, per_page)
      next = if start + per_page < length(entries), do: Integer.to_string(start + per_page)

      {:ok, for({:name, n} <- page, do: n), for({:prefix, p} <- page, do: p), next}
    end
  end

  @names ["root/a/zarr.json", "root/a/c/0", "root/a/c/1", "root/b", "root/ab/x", "other/a/c/9"]

  describe "list/3" do
    test "every page, the store's root and the listed prefix taken off, keys sorted" do
      for per_page <- [1, 2, 100] do
        page = bucket(@names, per_page)

        assert ObjectStore.list("root/", "", page) ==
                 {:ok, ["a/c/0", "a/c/1", "a/zarr.json", "ab/x", "b"]}

        assert ObjectStore.list("root/", "a", page) == {:ok, ["a/c/0", "a/c/1", "a/zarr.json"]}
        assert ObjectStore.list("", "root/a/c/", page) == {:ok, ["root/a/c/0", "root/a/c/1"]}
        assert ObjectStore.list("root/", "zz", page) == {:ok, []}
      end
    end

    test "asks for pages with the tokens the service gave, without a delimiter" do
      page = bucket(@names, 2, self())
      assert {:ok, [_, _, _, _, _]} = ObjectStore.list("root/", "", page)
      assert_received {:page, "root/", nil, nil}
      assert_received {:page, "root/", nil, "2"}
      assert_received {:page, "root/", nil, "4"}
      refute_received {:page, _, _, _}
    end

    test "an error on any page is the answer" do
      page = fn
        _prefix, _delimiter, nil -> {:ok, ["root/a"], [], "next"}
        _prefix, _delimiter, "next" -> {:error, {:s3_error, 500, "InternalError", ""}}
      end

      assert ObjectStore.list("root/", "", page) ==
               {:error, {:s3_error, 500, "InternalError", ""}}
    end

    test "an empty token ends the listing" do
      assert ObjectStore.list("", "", fn _, _, _ -> {:ok, ["k"], [], ""} end) == {:ok, ["k"]}
    end
  end

  describe "list_dir/3" do
    test "the direct keys and sub-directories, over every page" do
      for per_page <- [1, 3, 100] do
        page = bucket(@names, per_page)

        assert ObjectStore.list_dir("root/", "", page) ==
                 {:ok, %{keys: ["b"], prefixes: ["a", "ab"]}}

        assert ObjectStore.list_dir("root/", "a/", page) ==
                 {:ok, %{keys: ["zarr.json"], prefixes: ["c"]}}

        assert ObjectStore.list_dir("root/", "a/c", page) ==
                 {:ok, %{keys: ["0", "1"], prefixes: []}}
      end
    end

    test "lists with the delimiter /" do
      page = bucket(@names, 10, self())
      assert {:ok, _} = ObjectStore.list_dir("root/", "a", page)
      assert_received {:page, "root/a/", "/", nil}
    end
  end

  describe "read_answer/5" do
    defp failure(answer), do: {:error, {:mapped, answer}}

    test "200, 206 and 416 give bytes and the generation header" do
      etag = [{"etag", ~s("e1")}]

      assert ObjectStore.read_answer({:ok, 200, etag, "0123"}, {1, 2}, "etag", nil, &failure/1) ==
               {:ok, "12", ~s("e1")}

      partial = [{"content-range", "bytes 1-2/4"} | etag]

      assert ObjectStore.read_answer({:ok, 206, partial, "12"}, {1, 2}, "etag", nil, &failure/1) ==
               {:ok, "12", ~s("e1")}

      assert ObjectStore.read_answer({:ok, 416, [], ""}, {9, 2}, "etag", "g", &failure/1) ==
               {:ok, "", "g"}
    end

    test "412 is a generation mismatch; the rest goes to the backend" do
      assert ObjectStore.read_answer({:ok, 412, [], ""}, nil, "etag", "g", &failure/1) ==
               {:error, :generation_mismatch}

      for answer <- [{:ok, 404, [], "nope"}, {:ok, 500, [], ""}, {:error, {:http_error, :closed}}] do
        assert ObjectStore.read_answer(answer, nil, "etag", nil, &failure/1) ==
                 {:error, {:mapped, answer}}
      end

      bad = {:ok, 206, [{"content-range", "bytes 0-1/4"}], "01"}

      # A 206 that is not the range asked for is never taken for it.
      assert ObjectStore.read_answer(bad, {2, 2}, "etag", nil, &failure/1) ==
               {:error, {:mapped, {:error, {:http_error, {:bad_content_range, "bytes 0-1/4"}}}}}
    end
  end

  describe "upload_parts/4" do
    test "parts of part_size bytes, the last shorter, results in part order" do
      value = :binary.list_to_bin(Enum.to_list(0..9))

      assert ObjectStore.upload_parts(value, 4, 3, fn i, part -> {:ok, {i, part}} end) ==
               {:ok, [{0, <<0, 1, 2, 3>>}, {1, <<4, 5, 6, 7>>}, {2, <<8, 9>>}]}

      assert ObjectStore.upload_parts(value, 10, 3, fn i, part -> {:ok, {i, part}} end) ==
               {:ok, [{0, value}]}
    end

    test "the first error in part order is the answer" do
      send = fn
        0, _ -> {:ok, 0}
        i, _ -> {:error, {:part, i}}
      end

      assert ObjectStore.upload_parts(:binary.copy("x", 10), 2, 2, send) ==
               {:error, {:part, 1}}
    end

    test "no more than `concurrency` parts in flight" do
      counter = :counters.new(2, [:atomics])

      send = fn i, _part ->
        :counters.add(counter, 1, 1)
        :counters.put(counter, 2, max(:counters.get(counter, 2), :counters.get(counter, 1)))
        Process.sleep(5)
        :counters.sub(counter, 1, 1)
        {:ok, i}
      end

      assert {:ok, results} = ObjectStore.upload_parts(:binary.copy("x", 40), 2, 3, send)
      assert results == Enum.to_list(0..19)
      assert :counters.get(counter, 2) <= 3
    end
  end
end
